// README Threads: a `Stream` belongs to the thread that made it.
fn assert_send<T: Send>() {}

fn main() {
    assert_send::<mlx_rs::Stream>();
}
