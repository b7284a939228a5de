//! Records the resolved quinn version (from Cargo.lock) so that `--version` reports it.
fn main() {
    println!("cargo:rerun-if-changed=Cargo.lock");
    let lock = std::fs::read_to_string("Cargo.lock").unwrap_or_default();
    let version_of = |name: &str| {
        lock.split("[[package]]")
            .find(|block| block.contains(&format!("name = \"{name}\"\n")))
            .and_then(|block| block.lines().find_map(|line| line.strip_prefix("version = \"")))
            .map(|v| v.trim_end_matches('"').to_string())
            .unwrap_or_else(|| "unknown".into())
    };
    println!("cargo:rustc-env=QUINN_VERSION=quinn {} (quinn-proto {}, rustls {}, h3 {})",
        version_of("quinn"), version_of("quinn-proto"), version_of("rustls"), version_of("h3"));
}
