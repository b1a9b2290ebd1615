//! Empty: the package has a build script only so that its `[build-dependencies]` (the host
//! features it unifies) are part of every build that includes it.
fn main() {}
