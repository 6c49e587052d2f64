//! `sed` and `awk` programs read for the ways their text reaches outside the text they
//! edit: `sed`'s `e`, `s///e`, `w file`, `r file`; `awk`'s `system()`, `print | "cmd"`,
//! `print > "file"`, `getline` from a file or command. Not parsed as languages; what
//! cannot be read that far is treated as reaching out (fail closed).

/// What a `sed` program reaches outside the text it edits.
#[derive(Debug, Default, PartialEq)]
pub(super) struct SedEffects {
    /// It runs programs (`e`, `s///e`), or could not be read.
    pub runs: bool,
    /// Files it writes (`w file`, `W file`, `s///w file`).
    pub writes: Vec<String>,
    /// Files it reads into its output (`r file`, `R file`).
    pub reads: Vec<String>,
}

/// Reads a `sed` program (GNU syntax, which the others are subsets of).
pub(super) fn sed_effects(program: &str) -> SedEffects {
    let mut effects = SedEffects::default();
    if read_sed(program, &mut effects).is_none() {
        effects.runs = true;
    }
    effects
}

fn read_sed(program: &str, effects: &mut SedEffects) -> Option<()> {
    let chars: Vec<char> = program.chars().collect();
    let mut at = 0;
    // The rest of the line from `from`, trimmed: a file name, a label, text.
    let rest_of_line = |from: usize| -> (String, usize) {
        let end = chars[from..]
            .iter()
            .position(|c| *c == '\n')
            .map_or(chars.len(), |offset| from + offset);
        (
            chars[from..end]
                .iter()
                .collect::<String>()
                .trim()
                .to_string(),
            end,
        )
    };
    while at < chars.len() {
        let c = chars[at];
        if c.is_whitespace() || c == ';' || c == '}' {
            at += 1;
            continue;
        }
        if c == '#' {
            at = rest_of_line(at).1;
            continue;
        }
        at = skip_address(&chars, at)?;
        while chars
            .get(at)
            .is_some_and(|c| c.is_whitespace() || *c == '!')
        {
            at += 1;
        }
        let Some(&command) = chars.get(at) else {
            // An address with no command is not a program sed accepts.
            return None;
        };
        at += 1;
        match command {
            '{' | '=' | 'd' | 'D' | 'g' | 'G' | 'h' | 'H' | 'n' | 'N' | 'p' | 'P' | 'x' | 'z'
            | 'F' => {}
            'l' | 'L' | 'q' | 'Q' => {
                while chars
                    .get(at)
                    .is_some_and(|c| c.is_ascii_digit() || *c == ' ')
                {
                    at += 1;
                }
            }
            ':' | 'b' | 't' | 'T' | 'v' => {
                while chars
                    .get(at)
                    .is_some_and(|c| *c != ';' && *c != '\n' && *c != '}')
                {
                    at += 1;
                }
            }
            'a' | 'i' | 'c' => {
                // Text to the end of the line; a backslash at its end continues it.
                loop {
                    let (_, end) = rest_of_line(at);
                    at = end;
                    if end > 0 && chars.get(end - 1) == Some(&'\\') && end < chars.len() {
                        at += 1;
                        continue;
                    }
                    break;
                }
            }
            'r' | 'R' | 'w' | 'W' => {
                let (file, end) = rest_of_line(at);
                at = end;
                if file.is_empty() {
                    return None;
                }
                match command {
                    'r' | 'R' => effects.reads.push(file),
                    _ => effects.writes.push(file),
                }
            }
            'e' => {
                effects.runs = true;
                at = rest_of_line(at).1;
            }
            's' | 'y' => {
                let delimiter = *chars.get(at)?;
                if delimiter == '\n' || delimiter == '\\' {
                    return None;
                }
                at = skip_delimited(&chars, at + 1, delimiter)?;
                at = skip_delimited(&chars, at, delimiter)?;
                if command == 's' {
                    while let Some(&flag) = chars.get(at) {
                        match flag {
                            'g' | 'p' | 'i' | 'I' | 'm' | 'M' | '0'..='9' => at += 1,
                            'e' => {
                                effects.runs = true;
                                at += 1;
                            }
                            'w' => {
                                let (file, end) = rest_of_line(at + 1);
                                at = end;
                                if file.is_empty() {
                                    return None;
                                }
                                effects.writes.push(file);
                            }
                            _ => break,
                        }
                    }
                }
            }
            _ => return None,
        }
    }
    Some(())
}

/// Skips an address (`3`, `$`, `/re/`, `\%re%`, `first~step`, `addr1,addr2`, `addr,+N`),
/// returning where the command starts.
fn skip_address(chars: &[char], mut at: usize) -> Option<usize> {
    for part in 0..2 {
        match chars.get(at) {
            Some('/') => at = skip_delimited(chars, at + 1, '/')?,
            Some('\\') => {
                let delimiter = *chars.get(at + 1)?;
                at = skip_delimited(chars, at + 2, delimiter)?;
            }
            Some('$') => at += 1,
            Some(c) if c.is_ascii_digit() || (part == 1 && matches!(c, '+' | '~')) => {
                at += 1;
                while chars
                    .get(at)
                    .is_some_and(|c| c.is_ascii_digit() || *c == '~')
                {
                    at += 1;
                }
            }
            _ if part == 0 => return Some(at),
            _ => return None,
        }
        while chars.get(at).is_some_and(|c| matches!(c, 'I' | 'M')) {
            at += 1;
        }
        if chars.get(at) != Some(&',') || part == 1 {
            return Some(at);
        }
        at += 1;
    }
    Some(at)
}

/// Skips a regular expression or replacement up to its closing `delimiter` (a backslash
/// escapes the next character), returning the position after it.
fn skip_delimited(chars: &[char], mut at: usize, delimiter: char) -> Option<usize> {
    while let Some(&c) = chars.get(at) {
        if c == '\\' {
            at += 2;
            continue;
        }
        if c == delimiter {
            return Some(at + 1);
        }
        if c == '\n' && delimiter != '\n' {
            // GNU sed allows a newline only escaped in these parts.
            return None;
        }
        at += 1;
    }
    None
}

/// Whether an `awk` program runs programs, writes files or reads other files than the
/// ones it is given: `system()`, a pipe to or from a command, a `print` redirected to a
/// file, `getline <file`. Comparisons (`$3 > 100`) and regular expressions with `|` are
/// not mistaken for them: redirections count only inside `print` and `printf` statements
/// at their own level of parentheses.
pub(super) fn awk_reaches_out(program: &str) -> bool {
    let text = without_strings(program);
    let compact: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if compact.contains("system(")
        || compact.contains("system (")
        || compact.contains("|&")
        || compact.contains("| getline")
        || compact.contains("|getline")
        || reads_with_getline(&compact)
    {
        return true;
    }
    let bytes = text.as_bytes();
    let mut at = 0;
    while let Some(offset) = text[at..].find("print") {
        let start = at + offset;
        at = start + "print".len();
        let before = start.checked_sub(1).map(|i| bytes[i]);
        if before.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_') {
            continue;
        }
        let mut depth = 0i32;
        for &b in &bytes[at..] {
            match b {
                b'(' => depth += 1,
                b')' => depth -= 1,
                b';' | b'}' | b'\n' if depth <= 0 => break,
                b'>' | b'|' if depth <= 0 => return true,
                _ => {}
            }
        }
    }
    false
}

/// `getline <file` or `getline var <file`.
fn reads_with_getline(text: &str) -> bool {
    text.match_indices("getline").any(|(at, _)| {
        let rest = text[at + "getline".len()..].trim_start();
        let rest = rest
            .trim_start_matches(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == '$')
            .trim_start();
        rest.starts_with('<')
    })
}

/// `program` with its string literals emptied (`"a|b"` becomes `""`).
fn without_strings(program: &str) -> String {
    let mut out = String::with_capacity(program.len());
    let mut chars = program.chars();
    while let Some(c) = chars.next() {
        out.push(c);
        if c == '"' {
            while let Some(inner) = chars.next() {
                if inner == '\\' {
                    chars.next();
                } else if inner == '"' {
                    out.push('"');
                    break;
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sed_programs_that_run_write_or_read_files_are_found() {
        assert!(sed_effects("e rm -rf ~").runs);
        assert!(sed_effects("1e id").runs);
        assert!(sed_effects("s/a/b/e").runs);
        assert!(sed_effects("s/a/b/ge").runs);
        assert_eq!(
            sed_effects("w /home/dev/.bashrc").writes,
            ["/home/dev/.bashrc"]
        );
        assert_eq!(sed_effects("s/a/b/w out.txt").writes, ["out.txt"]);
        assert_eq!(sed_effects("/x/W log").writes, ["log"]);
        assert_eq!(sed_effects("r ~/.ssh/id_rsa").reads, ["~/.ssh/id_rsa"]);
        // Unreadable programs count as running something.
        assert!(sed_effects("s/a/b").runs);
        assert!(sed_effects("k").runs);
    }

    #[test]
    fn everyday_sed_programs_only_edit() {
        for program in [
            "s/foo/bar/g",
            "s|/usr/local|/opt|g",
            "s/a\\/b/c/",
            "s/e/w/",
            "s/x/y/2",
            "1,5p",
            "/^#/d",
            "$d",
            "/start/,/end/d",
            "10q",
            "s/^[ \\t]*//;s/[ \\t]*$//",
            "/pattern/!d",
            "1~2d",
            "0,/x/s//y/",
            "/a/,+2d",
            "y/abc/xyz/",
            "/foo/{s/a/b/;p}",
            ":a;N;$!ba;s/\\n/ /g",
            "1i\\\nheader",
            "$a footer",
            "\\%/usr%d",
            "s/x/y/I",
            "=",
            "",
            "  ",
        ] {
            let effects = sed_effects(program);
            assert_eq!(effects, SedEffects::default(), "{program:?}");
        }
    }

    #[test]
    fn awk_programs_that_reach_out_are_found_and_others_are_not() {
        for program in [
            "BEGIN{system(\"rm -rf ~\")}",
            "{print > \"/home/dev/.bashrc\"}",
            "{print $1 >> \"out\"}",
            "{print | \"sh\"}",
            "{printf \"%s\", $0 | \"mail x\"}",
            "BEGIN{\"id\" | getline x; print x}",
            "BEGIN{while ((getline line < \"/etc/shadow\") > 0) print line}",
            "BEGIN{print |& \"cmd\"}",
        ] {
            assert!(awk_reaches_out(program), "{program}");
        }
        for program in [
            "{print $1}",
            "$3 > 100 {print $1}",
            "/foo|bar/ {print}",
            "{print $1 \"|\" $2}",
            "{print ($1 > $2)}",
            "NR > 1 {s += $2} END {print s}",
            "{printf \"%s > %s\\n\", $1, $2}",
            "BEGIN{FS=\":\"} {print $1}",
            "length($0) > 80",
        ] {
            assert!(!awk_reaches_out(program), "{program}");
        }
    }
}
