// README Threads: a `FunctionExporter` traces on the thread that made it.
fn assert_send<T: Send>() {}

fn main() {
    assert_send::<mlx_rs::export::FunctionExporter<'static>>();
}
