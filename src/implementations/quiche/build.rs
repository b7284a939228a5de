//! Records the resolved quiche version (from Cargo.lock) so that `--version` reports it.
fn main() {
    println!("cargo:rerun-if-changed=Cargo.lock");
    let lock = std::fs::read_to_string("Cargo.lock").unwrap_or_default();
    let version = lock
        .split("[[package]]")
        .find(|block| block.contains("name = \"quiche\"\n"))
        .and_then(|block| block.lines().find_map(|line| line.strip_prefix("version = \"")))
        .map(|v| v.trim_end_matches('"').to_string())
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=QUICHE_VERSION=quiche {version}");
}
