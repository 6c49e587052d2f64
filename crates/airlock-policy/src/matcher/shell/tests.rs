//! Unit tests of the `prefix` matcher: data-driven tables of command lines per side.

use super::*;

fn prefixes(texts: &[&str]) -> Vec<CommandPrefix> {
    texts
        .iter()
        .map(|text| CommandPrefix::parse(text).unwrap_or_else(|error| panic!("{error}")))
        .collect()
}

/// Each case: (command line, expected match) against `prefix_texts` on `side`.
#[track_caller]
fn check(prefix_texts: &[&str], side: Side, cases: &[(&str, bool)]) {
    let compiled = prefixes(prefix_texts);
    let failures: Vec<String> = cases
        .iter()
        .filter(|(command, expected)| command_matches(command, &compiled, side) != *expected)
        .map(|(command, expected)| {
            format!(
                "{side:?} {prefix_texts:?} on {command:?}: expected {expected}\n  segments: {:?}",
                ParsedCommand::parse(command)
                    .segments
                    .iter()
                    .map(|s| s.words.iter().map(|w| w.text.as_str()).collect::<Vec<_>>())
                    .collect::<Vec<_>>()
            )
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn allow_is_a_word_prefix_of_every_segment() {
    check(
        &["git status", "git log", "ls", "echo"],
        Side::Allow,
        &[
            ("git status", true),
            ("git status -s", true),
            ("git  status", true),
            ("  git\tstatus  ", true),
            ("'git' \"status\"", true),
            ("g\\it status", true),
            ("git statusx", false),
            ("git", false),
            ("gitstatus", false),
            ("git status && git log --oneline", true),
            ("git status; ls -la | echo done", true),
            ("git status && rm -rf /", false),
            ("git status || rm -rf /", false),
            ("git status; rm -rf /", false),
            ("git status | sh", false),
            ("git status & rm -rf /", false),
            ("git status\nrm -rf /", false),
            ("git status\r\n", false),
            ("echo \"a && b; rm -rf /\"", true),
            ("echo 'a | b' \"c ; d\"", true),
            ("echo a\\;rm", true),
            ("echo $(rm -rf /)", false),
            ("echo \"$(rm -rf /)\"", false),
            ("echo `rm -rf /`", false),
            ("echo \"`rm -rf /`\"", false),
            ("echo $(ls $(rm -rf /))", false),
            ("echo $(ls $(git status))", true),
            ("echo <(rm -rf /)", false),
            ("ls >(rm x)", false),
            ("(rm -rf /)", false),
            ("(ls; git status)", true),
            ("echo ${x:-$(rm -rf /)}", false),
            ("echo $((1 + $(rm -rf /)))", false),
            ("echo $((1 + 2))", true),
            ("echo '$(rm -rf /)'", true),
            ("echo \\$(rm -rf /)", false),
            ("git status # && rm -rf /", true),
            ("git status \\\n  -s", true),
            ("", false),
            ("   \n\t", false),
            ("# only a comment", false),
        ],
    );
}

#[test]
fn allow_fails_closed() {
    check(
        &["git status", "cat", "echo", "bash", "sh", "find", "eval"],
        Side::Allow,
        &[
            // Unlexable: never an allow.
            ("echo 'unbalanced", false),
            ("echo \"unbalanced", false),
            ("echo $(ls", false),
            ("echo `ls", false),
            ("git status)", false),
            ("cat <<EOF", false),
            // Writing redirections.
            ("cat a > b", false),
            ("cat a >> b", false),
            ("cat a 2> err", false),
            ("cat a &> all", false),
            ("cat a >| b", false),
            ("cat a <> b", false),
            ("cat a >&file", false),
            ("(cat a) > b", false),
            ("cat a>b", false),
            // Redirections that write nothing.
            ("cat a < b", true),
            ("cat a 2>&1", true),
            ("cat a 2>/dev/null", true),
            ("cat <<< hello", true),
            ("cat <<'EOF'\n$(rm -rf /)\nEOF", true),
            ("cat <<EOF\n$(rm -rf /)\nEOF", false),
            ("cat <<-EOF\n\thello $(git status)\n\tEOF\necho done", true),
            // A here-document the input ends before its delimiter: bash reads the rest as
            // its body (and runs the command), so the rest is never a command.
            ("cat <<EOF\nno end", true),
            ("cat <<'EOF'\nrm -rf /\nEOF2", true),
            ("cat <<EOF\nno end $(rm -rf /)", false),
            // Words the shell computes.
            ("$CMD", false),
            ("git $SUB", false),
            ("g$(echo)it status", false),
            ("{git,status}", false),
            // Exact from the first word: no wrappers, no basename.
            ("sudo git status", false),
            ("FOO=1 git status", false),
            ("/usr/bin/git status", false),
            // Nested scripts must be allowed too.
            ("bash -c 'git status'", true),
            ("bash -c 'git status; rm -rf /'", false),
            ("sh -ec \"echo \\\"$(rm x)\\\"\"", false),
            ("bash -o pipefail -c 'rm -rf /'", false),
            ("bash -c \"$SCRIPT\"", false),
            ("bash -c 'echo \"unbalanced'", false),
            ("bash script.sh", true),
            ("eval git status", true),
            ("eval rm -rf /", false),
            ("find . -name x -exec cat {} \\;", true),
            ("find . -exec rm {} +", false),
        ],
    );
}

#[test]
fn restrict_matches_any_segment() {
    check(
        &["rm -rf", "git push"],
        Side::Restrict,
        &[
            ("rm -rf /", true),
            ("rm -rf", true),
            ("rm -r -f /", false),
            ("rm -rfx /", false),
            ("rm", false),
            ("ls -la", false),
            ("git status && rm -rf /", true),
            ("git status || rm -rf /", true),
            ("ls; rm -rf /tmp/x", true),
            ("ls | rm -rf x", true),
            ("ls & rm -rf x", true),
            ("ls\nrm -rf x", true),
            ("echo $(rm -rf /)", true),
            ("echo \"$(rm -rf /)\"", true),
            ("echo `rm -rf /`", true),
            ("echo $(ls $(rm -rf /))", true),
            ("echo `echo \\`rm -rf /\\``", true),
            ("cat <(rm -rf /)", true),
            ("(cd /; rm -rf x)", true),
            ("echo 'rm -rf /'", false),
            ("echo \"rm -rf /\"", false),
            ("echo rm -rf", false),
            ("git status # rm -rf /", false),
            ("git push origin main", true),
            ("git pushx", false),
            ("cat <<EOF\n$(rm -rf /)\nEOF", true),
            ("cat <<'EOF'\n$(rm -rf /)\nEOF", false),
        ],
    );
}

#[test]
fn restrict_sees_through_disguises() {
    check(
        &["rm -rf"],
        Side::Restrict,
        &[
            ("/bin/rm -rf /", true),
            ("./rm -rf /", true),
            ("\\rm -rf /", true),
            ("'rm' '-rf' /", true),
            ("r\"m\" -r''f /", true),
            ("$'\\x72\\x6d' -rf /", true),
            ("$'\\162m' -rf /", true),
            ("sudo rm -rf /", true),
            ("sudo -u root -E rm -rf /", true),
            ("FOO=1 rm -rf x", true),
            ("FOO=1 BAR=\"a b\" sudo env -i X=2 rm -rf x", true),
            ("env rm -rf x", true),
            ("command rm -rf x", true),
            ("exec rm -rf x", true),
            ("nohup rm -rf x &", true),
            ("time rm -rf x", true),
            ("nice -n 10 rm -rf x", true),
            ("timeout 10 rm -rf x", true),
            ("builtin rm -rf x", true),
            ("ls | xargs rm -rf", true),
            ("ls | xargs -n 1 -I {} rm -rf {}", true),
            ("if true; then rm -rf x; fi", true),
            ("for f in *; do rm -rf $f; done", true),
            ("{ rm -rf x; }", true),
            ("! rm -rf x", true),
            ("bash -c 'rm -rf /'", true),
            ("sh -c \"cd /tmp && rm -rf x\"", true),
            ("sudo bash -c 'ls; rm -rf /'", true),
            ("bash -c \"bash -c 'rm -rf /'\"", true),
            ("eval 'rm -rf /'", true),
            ("eval \"$CMD\"", true),
            ("find / -exec rm -rf {} \\;", true),
            ("xargs sh -c 'rm -rf \"$1\"' _", true),
            ("busybox rm -rf /", true),
            ("busybox sh -c 'rm -rf /'", true),
            ("su -c 'rm -rf /' root", true),
            ("setsid rm -rf x", true),
            ("chroot /mnt rm -rf x", true),
            // Computed words could be anything.
            ("$CMD -rf /", true),
            ("$(echo rm) -rf /", true),
            ("rm $FLAGS /", true),
            ("rm -r$(echo f) /", true),
            ("FOO=$(pwd) rm -rf x", true),
            ("FOO=$(pwd) make", false),
            ("FOO=$BAR ls -la", false),
            ("{rm,-rf,/}", true),
            // Globs that could expand to the prefix's words.
            ("/???/r? -rf /", true),
            ("rm -r? /", true),
            ("rm * /", true),
            ("rm *.txt", false),
            ("/usr/bin/rmdir -rf x", false),
            ("rmx -rf x", false),
            ("echo sudo rm -rf", false),
        ],
    );
}

#[test]
fn restrict_falls_back_to_crude_tokens() {
    check(
        &["rm -rf"],
        Side::Restrict,
        &[
            ("echo 'oops; rm -rf /", true),
            ("rm -rf \"/", true),
            ("echo $(rm -rf /", true),
            ("echo `rm -rf /", true),
            ("bash -c 'rm -rf /", true),
            ("f() { rm -rf /; }", true),
            ("echo 'unbalanced", false),
            ("", false),
            ("  ", false),
        ],
    );
    // A prefix whose first word is a path is compared exactly, not by basename.
    check(
        &["/bin/rm"],
        Side::Restrict,
        &[
            ("/bin/rm x", true),
            ("rm x", false),
            ("/usr/bin/rm x", false),
        ],
    );
}

#[test]
fn argv_is_one_segment_without_shell_parsing() {
    let allow = prefixes(&["git status", "echo", "bash"]);
    let deny = prefixes(&["rm -rf"]);
    let cases: &[(&[&str], bool, bool)] = &[
        // (argv, allow matches, deny matches)
        (&["git", "status", "-s"], true, false),
        (&["git", "status && rm -rf /"], false, false),
        (&["echo", "a && rm -rf /"], true, false),
        (&["echo", "$(rm -rf /)"], true, false),
        (&["echo", ">", "file"], true, false),
        (&["git"], false, false),
        (&["rm", "-rf", "/"], false, true),
        (&["/bin/rm", "-rf", "/"], false, true),
        (&["sudo", "rm", "-rf", "/"], false, true),
        (&["bash", "-c", "git status"], true, false),
        (&["bash", "-c", "git status; rm -rf /"], false, true),
        (&["bash", "-c", "echo 'unbalanced"], false, false),
        (&[], false, false),
    ];
    for (argv, allow_expected, deny_expected) in cases {
        assert_eq!(
            argv_matches(argv, &allow, Side::Allow),
            *allow_expected,
            "allow {argv:?}"
        );
        assert_eq!(
            argv_matches(argv, &deny, Side::Restrict),
            *deny_expected,
            "deny {argv:?}"
        );
    }
}

#[test]
fn prefixes_parse_like_commands() {
    let words = |text: &str| CommandPrefix::parse(text).map(|p| p.words().to_vec());
    assert_eq!(
        words("git status"),
        Ok(vec!["git".to_string(), "status".to_string()])
    );
    assert_eq!(
        words("  rm   -rf "),
        Ok(vec!["rm".to_string(), "-rf".to_string()])
    );
    assert_eq!(
        words("echo 'a b'"),
        Ok(vec!["echo".to_string(), "a b".to_string()])
    );
    assert_eq!(
        words("echo '$HOME'"),
        Ok(vec!["echo".to_string(), "$HOME".to_string()])
    );
    let rejected: &[(&str, &str)] = &[
        ("", "empty prefix"),
        ("   ", "empty prefix"),
        ("# comment", "empty prefix"),
        ("git 'status", "unbalanced quotes"),
        ("git \"status", "unbalanced quotes"),
        ("git status)", "unbalanced parentheses"),
        ("git status && ls", "one command"),
        ("git status; ls", "one command"),
        ("ls | wc", "one command"),
        ("cat > x", "redirections"),
        ("echo $HOME", "literal"),
        ("echo $(date)", "plain command"),
        ("(ls)", "plain command"),
    ];
    for (text, reason) in rejected {
        match CommandPrefix::parse(text) {
            Ok(prefix) => panic!("{text:?} should be rejected, parsed to {prefix:?}"),
            Err(message) => {
                assert!(
                    message.contains(reason),
                    "{text:?}: {message:?} should say {reason:?}"
                );
                assert!(
                    message.chars().next().is_some_and(|c| !c.is_uppercase()),
                    "{message:?} should start in lower case"
                );
            }
        }
    }
}

#[test]
fn hostile_nesting_is_bounded() {
    let deep = format!("{}rm -rf /{}", "$(".repeat(200), ")".repeat(200));
    check(&["echo"], Side::Allow, &[(deep.as_str(), false)]);
    check(&["rm -rf"], Side::Restrict, &[(deep.as_str(), true)]);
    let evals = format!("{}ls", "eval ".repeat(100));
    check(&["eval"], Side::Allow, &[(evals.as_str(), false)]);
    check(&["git push"], Side::Restrict, &[(evals.as_str(), true)]);
    // Quoting doubles at each level, so a few levels of `bash -c` stay cheap to read.
    let mut script = "rm -rf /".to_string();
    for _ in 0..6 {
        script = format!("bash -c '{}'", script.replace('\'', "'\\''"));
    }
    check(&["bash"], Side::Allow, &[(script.as_str(), false)]);
    check(&["rm -rf"], Side::Restrict, &[(script.as_str(), true)]);
}
