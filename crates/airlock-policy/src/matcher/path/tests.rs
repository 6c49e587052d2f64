//! Tests of path normalisation, anchors, needles and matching on both sides.

use super::*;

#[track_caller]
fn check_normalize(cases: &[(&str, Option<&str>)]) {
    let failures: Vec<String> = cases
        .iter()
        .filter(|(input, expected)| normalize(input).as_deref() != *expected)
        .map(|(input, expected)| {
            format!(
                "normalize({input:?}) = {:?}, expected {expected:?}",
                normalize(input)
            )
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Each case: (value, expected match) against `patterns` on `side`.
#[track_caller]
fn check(patterns: &[&str], side: Side, cases: &[(&str, bool)]) {
    let compiled: Vec<PathPattern> = patterns
        .iter()
        .map(|pattern| PathPattern::compile(pattern))
        .collect::<Result<_, _>>()
        .unwrap_or_else(|error| panic!("{error}"));
    let failures: Vec<String> = cases
        .iter()
        .filter(|(value, expected)| {
            path_matches(value, &compiled, side, &Context::unknown()) != *expected
        })
        .map(|(value, expected)| format!("{side:?} {patterns:?} on {value:?}: expected {expected}"))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn normalizes_lexically() {
    check_normalize(&[
        ("/", Some("/")),
        ("//", Some("/")),
        ("/etc/passwd", Some("/etc/passwd")),
        ("/etc//passwd", Some("/etc/passwd")),
        ("/etc/./passwd", Some("/etc/passwd")),
        ("/srv/app/", Some("/srv/app")),
        ("/srv/app/../etc/passwd", Some("/srv/etc/passwd")),
        ("/srv/app/../../etc/passwd", Some("/etc/passwd")),
        ("/../etc", Some("/etc")),
        ("/../../..", Some("/")),
        ("/a/b/c/../../d", Some("/a/d")),
        ("a/b", Some("a/b")),
        ("./a", Some("a")),
        (".", Some(".")),
        ("a/..", Some(".")),
        ("a/../../x", Some("../x")),
        ("../../x", Some("../../x")),
        ("../a/../x", Some("../x")),
        ("~", Some("~")),
        ("~/", Some("~")),
        ("~/a/../b", Some("~/b")),
        ("~/.ssh/./id_ed25519", Some("~/.ssh/id_ed25519")),
        ("~/a/../..", None),
        ("~/..", None),
        ("~bob/x/..", Some("~bob")),
        ("~bob/..", None),
        ("", None),
        ("/etc/passwd\0.txt", None),
        // A file literally named `...` is an ordinary segment.
        ("/a/.../b", Some("/a/.../b")),
    ]);
}

#[test]
fn allow_needs_the_normalised_path_inside_the_tree() {
    check(
        &["/srv/app/**"],
        Side::Allow,
        &[
            ("/srv/app", true),
            ("/srv/app/", true),
            ("/srv/app/x", true),
            ("/srv/app/x/y/z.txt", true),
            ("/srv/app/./x", true),
            ("/srv/app/x/../y", true),
            ("/srv//app//x", true),
            ("/srv/app/../etc/passwd", false),
            ("/srv/app/x/../../etc", false),
            ("/srv/application", false),
            ("/srv/app.bak/x", false),
            ("/srv", false),
            ("srv/app/x", false),
            ("", false),
            ("/srv/app/\0", false),
        ],
    );
}

#[test]
fn restrict_sees_through_traversal_and_fails_closed() {
    check(
        &["/etc/**", "~/.ssh/**"],
        Side::Restrict,
        &[
            ("/etc/passwd", true),
            ("/etc", true),
            ("/srv/app/../../etc/passwd", true),
            ("/srv/app/../../../../etc/shadow", true),
            // One `..` only leaves `app`: this is `/srv/etc/passwd`.
            ("/srv/app/../etc/passwd", false),
            ("//etc//passwd", true),
            ("/etcetera/x", false),
            ("/srv/etc/passwd", false),
            ("~/.ssh/id_ed25519", true),
            ("~/x/../.ssh/config", true),
            ("~/.sshx", false),
            // Unknowable values count as a match for deny and ask rules.
            ("~/../root/.ssh/id_rsa", true),
            ("", true),
            ("/tmp/a\0b", true),
        ],
    );
}

#[test]
fn single_stars_stay_within_a_segment() {
    check(
        &["/tmp/*.txt", "/var/log/?.log", "/data/**/secret"],
        Side::Allow,
        &[
            ("/tmp/a.txt", true),
            ("/tmp/a/b.txt", false),
            ("/tmp/.txt", true),
            ("/var/log/a.log", true),
            ("/var/log/ab.log", false),
            ("/data/secret", true),
            ("/data/a/b/secret", true),
            ("/data/a/b/secret/x", false),
        ],
    );
}

#[test]
fn home_and_relative_patterns() {
    check(
        &["~/projects/**", "src/*.rs"],
        Side::Allow,
        &[
            ("~/projects", true),
            ("~/projects/a/b", true),
            ("~/projects/../.ssh/id_rsa", false),
            ("~/../bob/projects/x", false),
            ("/home/me/projects/x", false),
            ("src/lib.rs", true),
            ("./src/lib.rs", true),
            ("src/../src/lib.rs", true),
            ("src/a/lib.rs", false),
            ("../src/lib.rs", false),
        ],
    );
}

#[test]
fn patterns_are_normalised_and_validated() {
    let normalized = |pattern: &str| PathPattern::compile(pattern).map(|p| p.as_str().to_string());
    assert_eq!(normalized("/srv//app/./**").as_deref(), Ok("/srv/app/**"));
    assert_eq!(normalized("/srv/x/../app/**").as_deref(), Ok("/srv/app/**"));
    assert_eq!(normalized("~/a/").as_deref(), Ok("{home}/a"));
    for bad in ["", "~/../x", "/tmp/[a", "/a\0"] {
        let error = PathPattern::compile(bad).err();
        assert!(error.is_some(), "{bad:?} should be rejected");
    }
    // `/**` covers every absolute path, including `/` itself.
    check(
        &["/**"],
        Side::Allow,
        &[("/", true), ("/etc/passwd", true), ("etc", false)],
    );
    // No pattern: nothing matches, but an unknowable value still restricts.
    check(&[], Side::Allow, &[("/etc", false)]);
    check(&[], Side::Restrict, &[("/etc", false), ("~/..", true)]);
}

/// A last segment `!(a|b)` is any name but those: a private key under any name in an
/// `.ssh` folder, not its public keys or settings; exceptions are globs of one name.
#[test]
fn a_last_segment_can_except_names() {
    let keys = [
        "**/.ssh/!(*.pub|config|known_hosts*)",
        "~/keys/!(README.md)",
    ];
    let cases = [
        ("/home/u/.ssh/id_ed25519_github", true),
        ("/home/u/.ssh/github", true),
        ("/srv/app/deploy/.ssh/deploy", true),
        ("/home/u/.ssh/id_rsa.pub", false),
        ("/home/u/.ssh/config", false),
        ("/home/u/.ssh/known_hosts.old", false),
        ("/home/u/.ssh/sockets/x", false),
        ("~/keys/signing", true),
        ("~/keys/README.md", false),
        ("~/keys/sub/README.md", false),
    ];
    check(&keys, Side::Restrict, &cases);
    check(&keys, Side::Allow, &cases);
    // Windows paths are matched folded: `Config` is `config` there.
    check(
        &keys,
        Side::Restrict,
        &[
            ("C:\\Users\\u\\.ssh\\Work_Key", true),
            ("C:\\Users\\u\\.ssh\\Config", false),
        ],
    );
    for bad in [
        "**/.ssh/!()",
        "**/.ssh/!(a||b)",
        "**/!(x)/y",
        "**/.ssh/!(a(b))",
    ] {
        assert!(
            PathPattern::compile(bad).is_err(),
            "{bad:?} should be rejected"
        );
    }
    // The pattern reads as written, and its literal beginning stops before `!(`.
    let pattern = PathPattern::compile("**/.ssh/!(*.pub)").unwrap();
    assert_eq!(pattern.as_str(), "**/.ssh/!(*.pub)");
}

/// Anchors resolve per call; relative values resolve against `cwd`; without a `cwd`
/// an allow never holds and a deny or ask always does.
#[test]
fn anchors_resolve_against_the_call() {
    let compile = |patterns: &[&str]| -> Vec<PathPattern> {
        patterns
            .iter()
            .map(|pattern| PathPattern::compile(pattern).unwrap())
            .collect()
    };
    let placed = Context::new(
        Some("/home/dev/app/src"),
        Some("/home/dev/app"),
        Some("/home/dev"),
    );
    let nowhere = Context::unknown();
    let relative_cwd = Context::new(Some("app/src"), None, Some("/home/dev"));
    let project = compile(&["{project}/**", "{tmp}/**"]);
    let cases: &[(&str, &Context, Side, bool)] = &[
        ("main.rs", &placed, Side::Allow, true),
        ("../Cargo.toml", &placed, Side::Allow, true),
        ("../../other/x", &placed, Side::Allow, false),
        ("/home/dev/app", &placed, Side::Allow, true),
        ("/home/dev/app/../app2/x", &placed, Side::Allow, false),
        ("/home/dev/application/x", &placed, Side::Allow, false),
        ("/tmp/x", &placed, Side::Allow, true),
        ("/var/tmp/a/b", &placed, Side::Allow, true),
        ("/tmpx/a", &placed, Side::Allow, false),
        ("~/app/x", &placed, Side::Allow, true),
        ("~/other", &placed, Side::Allow, false),
        // No cwd (or a relative one): the project is unknown.
        ("main.rs", &nowhere, Side::Allow, false),
        ("/home/dev/app/x", &nowhere, Side::Allow, false),
        ("main.rs", &relative_cwd, Side::Allow, false),
        ("main.rs", &nowhere, Side::Restrict, true),
        ("/home/dev/app/x", &nowhere, Side::Restrict, true),
        // `{tmp}` needs no context.
        ("/tmp/x", &nowhere, Side::Allow, true),
    ];
    let failures: Vec<String> = cases
        .iter()
        .filter(|(value, context, side, expected)| {
            path_matches(value, &project, *side, context) != *expected
        })
        .map(|(value, _, side, expected)| format!("{side:?} {value}: expected {expected}"))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    let home = compile(&["{home}/.ssh/**"]);
    assert!(path_matches(
        "~/.ssh/id_rsa",
        &home,
        Side::Restrict,
        &nowhere
    ));
    assert!(path_matches(
        "/home/dev/.ssh/id_rsa",
        &home,
        Side::Restrict,
        &placed
    ));
    assert!(!path_matches(
        "/home/dev/.sshx",
        &home,
        Side::Restrict,
        &placed
    ));
    assert!(path_matches(
        "../../.ssh/config",
        &home,
        Side::Restrict,
        &placed
    ));
    for bad in [
        "{projct}/**",
        "/x/{project}/**",
        "{project}x",
        "{home}/../x",
    ] {
        assert!(
            PathPattern::compile(bad).is_err(),
            "{bad} should be rejected"
        );
    }
}

/// The needle is text every match holds: it never turns a match into a miss.
#[test]
fn needles_are_text_every_match_holds() {
    for (glob, want) in [
        ("**/.env", Some(".env")),
        ("**/.env.*.local", Some(".local")),
        ("/etc/**", Some("/etc/")),
        (".ssh/*_key", Some(".ssh/")),
        ("**/*.key", Some(".key")),
        ("**/id_{rsa,dsa}", Some("id_")),
        (
            "Library/Application Support/Google/Chrome/*/Login Data",
            Some("Library/Application Support/Google/Chrome/"),
        ),
        ("*", None),
        ("**", None),
        ("[ab]x/**", Some("x/")),
        ("a\\*b", None),
    ] {
        assert_eq!(needle(glob).as_deref(), want, "{glob}");
    }
    let context = Context::new(Some("/home/dev/app"), None, Some("/home/dev"));
    for (pattern, path, want) in [
        ("**/.env", ".env", true),
        ("**/.env", "/home/dev/app/.env", true),
        ("**/.env", "/home/dev/app/.envrc", false),
        ("{home}/.ssh/*_key", "/home/dev/.ssh/host_key", true),
        ("{home}/.ssh/*_key", "/home/dev/.ssh/known_hosts", false),
        ("/etc/**", "/etc", true),
        ("/etc/**", "/etc/passwd", true),
        ("**/id_{rsa,dsa}", "/x/id_dsa", true),
        ("{project}/**", "/home/dev/app", true),
    ] {
        let compiled = PathPattern::compile(pattern).unwrap();
        assert_eq!(
            compiled.matches(path, &context),
            Some(want),
            "{pattern} {path}"
        );
    }
}

/// The plain-text shortcut answers as the glob engine does on every shape it takes.
#[test]
fn literal_globs_answer_as_the_glob_engine() {
    let globs = [
        "**",
        "a/**",
        "a/b/**",
        "**/a",
        "**/a/b",
        "a",
        "a/b",
        ".env",
        "**/.env",
        ".aws/credentials",
        ".ssh",
        "x.y/**",
    ];
    let rests = [
        "a",
        "a/b",
        "a/b/c",
        "b/a",
        "ba",
        "ab",
        "x/a/b",
        "a/bc",
        ".env",
        "x/.env",
        "x.env",
        ".aws/credentials",
        "y/.aws/credentials",
        ".ssh",
        ".ssh/id",
        "x.y",
        "x.y/z",
        "a/\u{1}",
        "x/ya",
        "b",
    ];
    for glob in globs {
        let literal = Literal::of(glob, false).unwrap_or_else(|| panic!("{glob} is plain"));
        let engine = compile_glob(glob, glob).unwrap();
        for rest in rests {
            assert_eq!(
                literal.matches(rest),
                engine.is_match(rest),
                "{glob} on {rest}"
            );
        }
    }
    for glob in [
        "*.pem", "a/*", "**/*.key", "a/**/b", "{a,b}", "a\\*b", "/etc/x", "a,b",
    ] {
        assert_eq!(Literal::of(glob, false), None, "{glob}");
    }
    let absolute = ["/etc/**", "/etc/shadow", "/var/run/secrets/**", "/a.b/**"];
    let paths = [
        "/etc",
        "/etc/shadow",
        "/etc/shadow-",
        "/etc/a/b",
        "/etcx",
        "/var/run/secrets",
        "/var/run/secrets/k",
        "/a.b/c",
        "/a.b",
        "/",
        "/\u{1}",
        "/etc/\u{1}",
    ];
    for glob in absolute {
        let literal = Literal::of(glob, true).unwrap_or_else(|| panic!("{glob} is plain"));
        let engine = compile_glob(glob, glob).unwrap();
        for path in paths {
            assert_eq!(
                literal.matches(path),
                engine.is_match(path),
                "{glob} on {path}"
            );
        }
    }
    for glob in ["**", "**/x", "/etc/*", "etc/**", "/**"] {
        assert_eq!(Literal::of(glob, true), None, "{glob}");
    }
    // Roots: the directory of `dir/**`, compared as text.
    assert_eq!(root_text("/etc/**").as_deref(), Some("/etc"));
    assert_eq!(root_text("/**").as_deref(), Some("/"));
    assert_eq!(root_text(".aws/sso/**").as_deref(), Some(".aws/sso"));
    assert_eq!(root_text("**"), None);
    assert_eq!(root_text("a/*/**"), None);
}

/// The one-pass `is_normal` answers as the definition does (no empty, `.` or `..`
/// segment), on every string of up to seven bytes over `a`, `.` and `/`.
#[test]
fn is_normal_agrees_with_its_definition() {
    let by_definition = |rest: &str| {
        !rest.is_empty()
            && rest
                .split('/')
                .all(|segment| !matches!(segment, "" | "." | ".."))
    };
    let mut strings = vec![String::new()];
    let mut checked = 0;
    for _ in 0..7 {
        let mut longer = Vec::new();
        for text in &strings {
            for byte in ['a', '.', '/'] {
                let candidate = format!("{text}{byte}");
                assert_eq!(
                    super::is_normal(&candidate),
                    by_definition(&candidate),
                    "{candidate:?}"
                );
                checked += 1;
                longer.push(candidate);
            }
        }
        strings = longer;
    }
    assert!(!super::is_normal(""));
    assert!(checked > 3000, "{checked}");
}

/// `concat_starts_with` answers as joining the strings and asking `starts_with` does.
#[test]
fn concat_starts_with_agrees_with_joined_strings() {
    let pieces = ["", "/", "a", "/a", "a/", "/a/b", "ab", "/ab/"];
    for a0 in pieces {
        for a1 in pieces {
            for b0 in pieces {
                for b1 in ["", "/"] {
                    assert_eq!(
                        super::concat_starts_with((a0, a1), (b0, b1)),
                        format!("{a0}{a1}").starts_with(&format!("{b0}{b1}")),
                        "{a0:?}+{a1:?} vs {b0:?}+{b1:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn windows_paths_are_absolute_slashed_and_caseless() {
    assert_eq!(
        windows_path("E:\\Algo\\Backend\\x.py").as_deref(),
        Some("/e:/algo/backend/x.py")
    );
    assert_eq!(windows_path("c:/Users/Me").as_deref(), Some("/c:/users/me"));
    assert_eq!(windows_path("D:").as_deref(), Some("/d:"));
    // Not drive paths: a relative name with a colon, a URL, a POSIX path.
    assert_eq!(windows_path("a:b"), None);
    assert_eq!(windows_path("http://x"), None);
    assert_eq!(windows_path("/home/dev"), None);
    assert_eq!(
        normalize("E:\\Algo\\..\\Other\\.\\x").as_deref(),
        Some("/e:/other/x")
    );
    // The drive is the top: `..` never climbs out of it.
    assert_eq!(normalize("E:\\..\\..\\x").as_deref(), Some("/e:/x"));
    assert_eq!(normalize("/e:/algo/../../../x").as_deref(), Some("/e:/x"));
    assert_eq!(normalize("E:\\..").as_deref(), Some("/e:"));
    assert!(is_windows("/e:/algo") && is_windows("/e:") && !is_windows("/home/e:"));
    assert!(is_absolute("E:\\x") && is_absolute("/x") && !is_absolute("x\\y"));
    // A pattern with upper case has a folded twin; one without is its own.
    let upper = PathPattern::compile("**/CLAUDE.md").unwrap();
    assert_eq!(
        upper.folded().map(PathPattern::as_str),
        Some("**/claude.md")
    );
    assert!(PathPattern::compile("**/.env").unwrap().folded().is_none());
}

#[test]
fn a_posix_shell_on_windows_names_drives_at_the_top() {
    for (path, expected) in [
        ("/c/Users/Me/.npmrc", Some("c:/Users/Me/.npmrc")),
        ("/c", Some("c:/")),
        ("/c/", Some("c:/")),
        ("/cygdrive/e/Algo", Some("e:/Algo")),
        ("/cd/x", None),
        ("/1/x", None),
        ("c/x", None),
        ("/", None),
        ("/cygdrive", None),
    ] {
        assert_eq!(posix_drive_path(path).as_deref(), expected, "{path}");
    }
    // Read back as the drive path it names.
    assert_eq!(
        normalize(&posix_drive_path("/C/Users/Me/../Me/x").unwrap()).as_deref(),
        Some("/c:/users/me/x")
    );
}

#[test]
fn applications_keep_their_settings_in_known_folders_of_the_home() {
    use super::application_settings_folder as settings;
    let mac = Some("/Users/ana");
    assert!(settings(
        "/Users/ana/Library/Application Support/Code/User",
        mac
    ));
    assert!(settings("/Users/ana/Library/Preferences", mac));
    assert!(!settings("/Users/ana/Library/Mobile Documents/app", mac));
    assert!(!settings("/Users/ana/src/app", mac));
    assert!(settings(
        "C:\\Users\\Ana\\AppData\\Roaming\\Code\\User",
        Some("C:\\Users\\Ana")
    ));
    assert!(settings("/home/ana/.config/Code/User", Some("/home/ana")));
    assert!(!settings("/home/ana/.config/nvim", Some("/home/ana")));
    assert!(!settings("/home/ana/.config/codegen", Some("/home/ana")));
    // Without a reported home, one the path itself shows: macOS's, Windows', WSL's view of
    // a Windows home; an ordinary folder is none.
    assert!(settings(
        "/Users/ana/Library/Application Support/Code/User",
        None
    ));
    assert!(settings(
        "/mnt/c/Users/ana/AppData/Roaming/Code/User",
        Some("/home/ana")
    ));
    assert!(settings(
        "D:\\Users\\ana\\AppData\\Roaming\\Code\\User",
        None
    ));
    assert!(!settings("/srv/Library/Application Support/x", None));
    assert!(!settings("/mnt/c/work/AppData/x", None));
    // Claude's desktop app keeps its agent sessions' workspaces there: no settings.
    assert!(!settings(
        "/Users/ana/Library/Application Support/Claude/local-agent-mode-sessions/a/b/local_c/outputs",
        mac
    ));
    assert!(!settings(
        "C:\\Users\\Ana\\AppData\\Roaming\\Claude\\local-agent-mode-sessions\\a\\b\\local_c\\outputs",
        Some("C:\\Users\\Ana")
    ));
    assert!(settings(
        "/Users/ana/Library/Application Support/Claude/claude_desktop_config.json",
        mac
    ));
}

#[test]
fn a_trailing_slash_names_folders_only() {
    let context = Context::new(None, None, Some("/home/dev"));
    let folders = PathPattern::compile("{home}/*/").expect("compiles");
    let any = PathPattern::compile("{home}/*").expect("compiles");
    let drive = PathPattern::compile("/?:/Users/*/").expect("compiles");
    let answer = |pattern: &PathPattern, path: &str, extent: Extent| {
        pattern.matches_resolved(path, extent, Side::Restrict, &context)
    };
    // An entry that may be a folder, or a tree, matches either way.
    for extent in [Extent::Entry, Extent::Tree] {
        assert_eq!(answer(&folders, "/home/dev/Documents", extent), Some(true));
        assert_eq!(answer(&any, "/home/dev/Documents", extent), Some(true));
    }
    // What can only be files never matches the folders-only form, folded or not.
    for extent in [Extent::File, Extent::Files] {
        assert_eq!(answer(&folders, "/home/dev/notes.txt", extent), Some(false));
        assert_eq!(answer(&any, "/home/dev/notes.txt", extent), Some(true));
        let folded = drive.folded().unwrap_or(&drive);
        assert_eq!(answer(folded, "/c:/users/me", extent), Some(false));
    }
    assert_eq!(answer(&drive, "/C:/Users/me", Extent::Entry), Some(true));
    // Files below a folder still match a pattern naming the folder (`rm ~/*`).
    let home = PathPattern::compile("{home}").expect("compiles");
    assert_eq!(answer(&home, "/home/dev", Extent::Files), Some(true));
    // `/` alone is the root, not a folders-only empty pattern.
    let root = PathPattern::compile("/").expect("compiles");
    assert_eq!(answer(&root, "/", Extent::File), Some(true));
    assert_eq!(folders.as_str(), "{home}/*");
}
