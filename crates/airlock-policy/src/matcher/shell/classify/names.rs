//! What a command's or a task's name says about it.

/// The binary tool a cross toolchain's (`arm-none-eabi-objdump`: a target named in two
/// parts or more) or LLVM's (`llvm-nm`) program is: each only reads the files it is
/// given, as the host's tool of that name does.
pub(super) fn toolchain_tool(name: &str) -> Option<&str> {
    let (prefix, tool) = name.rsplit_once('-')?;
    let known = matches!(
        tool,
        "objdump" | "readelf" | "nm" | "addr2line" | "size" | "strings" | "c++filt"
    );
    (known && (prefix == "llvm" || prefix.matches('-').count() >= 1)).then_some(tool)
}

/// A task named for deploying: `deploy`, `publish`, `ship`, alone or qualified
/// (`deploy:prod`, `publish-npm`, `api:deploy`).
pub(super) fn names_deploy_task(word: &str) -> bool {
    !word.starts_with('-')
        && word
            .split([':', '-', '_', '/', '.', ','])
            .any(|part| matches!(part, "deploy" | "publish" | "ship"))
}
