// README Threads: `Compiled<F>` is `Send` only if `F` is.
use std::rc::Rc;

use mlx_rs::compile::Compiled;

fn assert_send<T: Send>() {}

fn check<F>(_: &F) {
    assert_send::<Compiled<F>>();
}

fn main() {
    let shared = Rc::new(2.0f32);
    check(&move || *shared);
}
