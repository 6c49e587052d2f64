//! Link flags for the `airlock` binary's start-up.
//!
//! Coding agents start `airlock hook …` as a new process for every tool call, so the
//! binary's start is paid hundreds of times a session. Most of what the dynamic loader
//! does before `main` is applying ~54,000 relative relocations (a position-independent
//! executable's pointers to itself), read from a 1.3 MB `.rela.dyn` table. Linked with
//! `-z pack-relative-relocs`, the same relocations are a `DT_RELR` bitmap of a few
//! kilobytes: less to read and page in at every start (BENCHMARKS.md, "Hook cost per
//! call"). The executable stays position-independent (its address is still randomised).
//!
//! The flag is for the final link of the `airlock` binary only (`rustc-link-arg-bins`), so
//! no dependency is rebuilt for it. It needs a linker that knows it (GNU ld ≥ 2.38, lld ≥
//! 15, mold) and a glibc ≥ 2.36 where the binary runs; the linker records that need as the
//! symbol version `GLIBC_ABI_DT_RELR`, so an older glibc refuses to start the binary with
//! a clear error instead of running it wrongly. Whether both hold here is probed by
//! linking and running a small program with the flag; when either does not (or when
//! cross-compiling, where the probe cannot run), the binary is linked as before.
//! `AIRLOCK_PACK_RELOCS=0` opts out, e.g. to build a binary for a system with an older
//! glibc than the build machine's.

use std::path::Path;
use std::process::{Command, Output};

const FLAG: &str = "-Wl,-z,pack-relative-relocs";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=AIRLOCK_PACK_RELOCS");
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    if std::env::var("AIRLOCK_PACK_RELOCS").is_ok_and(|value| value == "0") {
        return;
    }
    let target = std::env::var("TARGET").unwrap_or_default();
    let host = std::env::var("HOST").unwrap_or_default();
    // Only where the probe's verdict holds for the binary: built for this very machine,
    // with glibc (musl and other systems have their own loaders).
    if target != host || !target.ends_with("-linux-gnu") {
        return;
    }
    let Some(out_dir) = std::env::var_os("OUT_DIR") else {
        return;
    };
    // rustc links through this driver (`cc` unless a linker is configured for the target).
    let linker = std::env::var("RUSTC_LINKER").unwrap_or_else(|_| "cc".to_owned());
    if probe(&linker, Path::new(&out_dir)) {
        println!("cargo:rustc-link-arg-bins={FLAG}");
    } else {
        println!(
            "cargo:warning=airlock: `{linker}` or this glibc cannot pack relative relocations \
             (-z pack-relative-relocs); the binary is linked without it and starts a little slower"
        );
    }
}

/// Whether `linker` links a position-independent program with the flag, without a word
/// of complaint (GNU ld before 2.38 warns that it ignores an unknown `-z` option), and the
/// program then runs here (the loader accepts `DT_RELR`).
fn probe(linker: &str, out_dir: &Path) -> bool {
    let source = out_dir.join("relr_probe.c");
    let program = out_dir.join("relr_probe");
    // A table of pointers, so that the program has relative relocations to pack.
    let text = "static const char *const names[] = {\"a\", \"b\", \"c\"};\n\
                const char *const *table = names;\n\
                int main(void) { return table[2][0] == 'c' ? 0 : 1; }\n";
    if std::fs::write(&source, text).is_err() {
        return false;
    }
    let linked = Command::new(linker)
        .args(["-fPIE", "-pie", FLAG, "-o"])
        .arg(&program)
        .arg(&source)
        .output();
    let clean = |output: &Output| {
        output.status.success()
            && !String::from_utf8_lossy(&output.stderr)
                .to_ascii_lowercase()
                .contains("warning")
    };
    if !linked.as_ref().is_ok_and(clean) {
        return false;
    }
    Command::new(&program)
        .status()
        .is_ok_and(|status| status.success())
}
