// README Threads: an `ImportedFunction` may move but not be shared.
fn assert_sync<T: Sync>() {}

fn main() {
    assert_sync::<mlx_rs::export::ImportedFunction>();
}
