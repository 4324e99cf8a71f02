// README Threads: a `FunctionExporter` cannot be shared between threads.
fn assert_sync<T: Sync>() {}

fn main() {
    assert_sync::<mlx_rs::export::FunctionExporter<'static>>();
}
