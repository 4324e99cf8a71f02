// README Threads: `Array` is not `Sync` (clones, not shared references, cross threads).
fn assert_sync<T: Sync>() {}

fn main() {
    assert_sync::<mlx_rs::Array>();
}
