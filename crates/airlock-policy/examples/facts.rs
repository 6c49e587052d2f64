//! Prints what the shell classifier reads in a command line: `cargo run -p airlock-policy
//! --example facts -- CWD HOME 'COMMAND' [powershell]`. A tool for people changing the
//! classification.
use airlock_policy::classes::ClassTable;
use airlock_policy::context::Context;
use airlock_policy::matcher::shell::classify::classify;

#[allow(clippy::print_stdout, clippy::print_stderr, clippy::expect_used)]
fn main() {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let (cwd, home, command, powershell) = match arguments.as_slice() {
        [cwd, home, command] => (cwd, home, command, false),
        [cwd, home, command, shell] if shell == "powershell" => (cwd, home, command, true),
        _ => {
            eprintln!("usage: facts CWD HOME COMMAND [powershell]");
            std::process::exit(2);
        }
    };
    let table = ClassTable::built_in().expect("the built-in classes load");
    let context = Context::new(Some(cwd), None, Some(home)).in_powershell(powershell);
    for segment in classify(command, &table, &context).segments {
        println!("{} => {}", segment.text, segment.classes.describe());
        for (file, credential) in segment.files.iter().zip(&segment.credential) {
            println!(
                "    {:?} {:?} tree={} credential={credential}",
                file.role, file.path, file.tree
            );
        }
    }
}
