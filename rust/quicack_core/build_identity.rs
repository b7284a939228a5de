//! The build identity of quicack_core: its version and a hash of the sources it is built from, compiled in as
//! QUICACK_CORE_BUILD_IDENTITY (`quicack_core.build_identity()`). The workflow re-runs the jobs that use the core
//! when the identity of the installed build changes, and warns when the checkout's sources have another one
//! (`quicack.compiled_core` computes the same hash in Python; tests/test_compiled_core.py checks they agree).
//!
//! The sources: every file of the crate's folder but `target/` and hidden ones (src/, Cargo.toml, Cargo.lock,
//! pyproject.toml, the build scripts), and every file outside it that a .rs file names by a relative path literal
//! starting with "../" (data the build embeds, read by the build script or `include_str!`). The hash does not depend
//! on where the checkout is: SHA-256 over the sorted SHA-256 digests of the files' contents, one per line.

use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn crate_files(crate_dir: &Path, folder: &Path, found: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(folder).expect("the crate's folder is readable").flatten().collect();
    entries.sort_by_key(|entry| entry.file_name());
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        if name.starts_with('.') || (folder == crate_dir && name == "target") {
            continue;
        }
        if path.is_dir() {
            crate_files(crate_dir, &path, found);
        } else if path.is_file() {
            found.push(path);
        }
    }
}

/// The "../…" string literals of a Rust source: paths outside the folder it is in.
fn relative_literals(text: &str) -> Vec<&str> {
    let mut literals = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("\"../") {
        let after = &rest[start + 1..];
        match after.find('"') {
            Some(end) => {
                literals.push(&after[..end]);
                rest = &after[end + 1..];
            }
            None => break,
        }
    }
    literals
}

/// Every file the identity covers, each once (by its canonical path).
pub fn source_files(crate_dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    crate_files(crate_dir, crate_dir, &mut files);
    let mut canonical: BTreeSet<PathBuf> = files.iter().filter_map(|f| f.canonicalize().ok()).collect();
    for file in files.iter().filter(|f| f.extension().is_some_and(|e| e == "rs")) {
        let Ok(text) = std::fs::read_to_string(file) else { continue };
        for literal in relative_literals(&text) {
            // include_str! resolves from the file's folder, a build script from the crate's.
            for base in [file.parent().unwrap_or(crate_dir), crate_dir] {
                if let Ok(path) = base.join(literal).canonicalize() {
                    if path.is_file() {
                        canonical.insert(path);
                    }
                }
            }
        }
    }
    canonical.into_iter().collect()
}

pub fn source_hash(files: &[PathBuf]) -> String {
    let mut digests: Vec<String> = files
        .iter()
        .map(|f| hex(&Sha256::digest(std::fs::read(f).unwrap_or_else(|e| panic!("{}: {e}", f.display())))))
        .collect();
    digests.sort();
    let mut joined = String::new();
    for digest in digests {
        joined.push_str(&digest);
        joined.push('\n');
    }
    hex(&Sha256::digest(joined.as_bytes()))
}

/// Emits QUICACK_CORE_BUILD_IDENTITY ("<version>+<16 hex digits>") and re-runs the build script when a source changes.
pub fn record() {
    let crate_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let version = std::env::var("CARGO_PKG_VERSION").expect("set by cargo");
    let files = source_files(&crate_dir);
    for file in &files {
        println!("cargo:rerun-if-changed={}", file.display());
    }
    // A new file in src/ changes the identity too.
    println!("cargo:rerun-if-changed={}", crate_dir.join("src").display());
    println!("cargo:rustc-env=QUICACK_CORE_BUILD_IDENTITY={version}+{}", &source_hash(&files)[..16]);
}
