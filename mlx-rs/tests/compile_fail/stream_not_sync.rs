// README Threads: a `Stream` cannot be shared between threads either.
fn assert_sync<T: Sync>() {}

fn main() {
    assert_sync::<mlx_rs::Stream>();
}
