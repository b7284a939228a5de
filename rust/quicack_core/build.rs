//! The build script: records the core's build identity (build_identity.rs). Nothing else.

#[path = "build_identity.rs"]
mod build_identity;

fn main() {
    build_identity::record();
}
