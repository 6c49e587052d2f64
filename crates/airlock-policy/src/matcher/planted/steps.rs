//! Commands that build code runs as steps: Jenkins' and Rake's `sh`, CMake's
//! `execute_process`, nox's `session.run`.

/// Shell steps named in build code: `sh "…"`/`sh '…'`/`sh("…")` (Jenkins, Rake), and
/// CMake's `execute_process(COMMAND …)`.
pub(super) fn shell_steps(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim_start();
        if let Some(rest) = trimmed
            .strip_prefix("sh ")
            .or_else(|| trimmed.strip_prefix("sh("))
            .or_else(|| trimmed.strip_prefix("bat "))
        {
            let rest = rest.trim_start().trim_start_matches("script:").trim_start();
            for quote in ['"', '\''] {
                if let Some(inner) = rest.strip_prefix(quote) {
                    if let Some((command, _)) = inner.rsplit_once(quote) {
                        out.push(command.to_owned());
                    }
                }
            }
        }
        // nox: `session.run("bash", "-c", "…", external=True)` runs its words.
        for runner in [
            "session.run(",
            "session.run_always(",
            "session.run_install(",
        ] {
            if let Some(at) = trimmed.find(runner) {
                out.extend(argv_call(&trimmed[at + runner.len()..]));
            }
        }
        let lower = trimmed.to_ascii_lowercase();
        if let Some(at) = lower.find("execute_process(command ") {
            let command = &trimmed[at + "execute_process(COMMAND ".len()..];
            let command = command.trim_end().trim_end_matches(')');
            out.push(command.to_owned());
        }
    }
    out
}

/// The command line of a call's positional string arguments (`"bash", "-c", "x y")` is
/// `bash -c 'x y'`), up to its keyword arguments or its closing parenthesis; an argument
/// that is not a string literal is a value computed at run time (`$VALUE`). `None` when
/// nothing is given.
pub(super) fn argv_call(arguments: &str) -> Option<String> {
    let mut words: Vec<String> = Vec::new();
    let mut chars = arguments.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace() || *c == ',') {
            chars.next();
        }
        match chars.peek().copied() {
            None | Some(')') => break,
            Some(quote @ ('"' | '\'')) => {
                chars.next();
                let mut word = String::new();
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => word.extend(chars.next()),
                        c if c == quote => break,
                        c => word.push(c),
                    }
                }
                let plain = !word.is_empty()
                    && word
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "-_./=:@+,%".contains(c));
                words.push(if plain {
                    word
                } else {
                    format!("'{}'", word.replace('\'', "'\\''"))
                });
            }
            Some(_) => {
                let rest: String = chars
                    .clone()
                    .take_while(|c| *c != ',' && *c != ')')
                    .collect();
                if rest.contains('=') && !rest.contains("==") {
                    break;
                }
                words.push("$VALUE".to_owned());
                for _ in 0..rest.chars().count() {
                    chars.next();
                }
            }
        }
    }
    (!words.is_empty()).then(|| words.join(" "))
}
