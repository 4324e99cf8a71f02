// README Threads: `Compiled<F>` is `Sync` only if `F` is.
use std::cell::Cell;

use mlx_rs::compile::Compiled;

fn assert_sync<T: Sync>() {}

fn check<F>(_: &F) {
    assert_sync::<Compiled<F>>();
}

fn main() {
    let calls = Cell::new(0u32);
    check(&move || calls.set(calls.get() + 1));
}
