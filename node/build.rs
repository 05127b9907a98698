//! napi-rs's link setup for a Node addon (symbols resolved by the loading process).
fn main() {
    napi_build::setup();
}
