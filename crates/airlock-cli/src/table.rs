//! Human output: aligned tables, `key  value` blocks and short relative times.
//!
//! Machine output is `--json`; everything here is for people reading a terminal, so it
//! favours short columns and truncates long text rather than wrapping it.

use jiff::Timestamp;
use std::fmt::Write as _;

/// Writes `text` to standard output. A reader that stopped reading (`airlock policy test
/// FILE | head -1`) is not an error: what it wanted it got. (`print!` panics there.)
pub fn write_stdout(text: &str) -> anyhow::Result<()> {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(error) if error.kind() != std::io::ErrorKind::BrokenPipe => Err(error.into()),
        _ => Ok(()),
    }
}

/// A table printed with every column as wide as its widest cell.
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(header: &[&str]) -> Table {
        Table {
            header: header.iter().map(|h| (*h).to_owned()).collect(),
            rows: Vec::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// The table as text, one line per row, with a trailing newline.
    pub fn render(&self) -> String {
        let mut widths: Vec<usize> = self.header.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (index, cell) in row.iter().enumerate() {
                if let Some(width) = widths.get_mut(index) {
                    *width = (*width).max(cell.chars().count());
                }
            }
        }
        let mut out = String::new();
        for row in std::iter::once(&self.header).chain(&self.rows) {
            let mut line = String::new();
            for (index, cell) in row.iter().enumerate() {
                let width = widths.get(index).copied().unwrap_or(0);
                let last = index + 1 == row.len();
                if last {
                    line.push_str(cell);
                } else {
                    let _ = write!(line, "{cell:<width$}  ");
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

/// `key  value` lines with the values aligned; empty values are left out.
pub fn fields(pairs: &[(&str, String)]) -> String {
    let width = pairs
        .iter()
        .filter(|(_, value)| !value.is_empty())
        .map(|(key, _)| key.chars().count())
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for (key, value) in pairs.iter().filter(|(_, value)| !value.is_empty()) {
        let _ = writeln!(out, "{key:<width$}  {value}");
    }
    out
}

/// At most `max` characters, with `…` when cut; newlines become spaces.
pub fn truncate(text: &str, max: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
        .collect();
    if flat.chars().count() <= max {
        return flat;
    }
    let mut cut: String = flat.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// `in 3h 20m` / `5m ago` / `now`, relative to now.
pub fn relative(at: Timestamp) -> String {
    let seconds = at.as_second() - Timestamp::now().as_second();
    let span = short_duration(seconds.unsigned_abs());
    match seconds {
        0 => "now".to_owned(),
        1.. => format!("in {span}"),
        _ => format!("{span} ago"),
    }
}

/// A timestamp followed by its relative form: `2025-01-01T10:00:00Z (in 3h 20m)`.
pub fn when(at: Timestamp) -> String {
    format!("{} ({})", at.strftime("%Y-%m-%d %H:%M:%SZ"), relative(at))
}

/// `45s`, `12m`, `3h 20m`, `2d 4h`: the two largest units.
pub fn short_duration(seconds: u64) -> String {
    let (days, hours, minutes) = (seconds / 86_400, seconds / 3600 % 24, seconds / 60 % 60);
    match (days, hours, minutes) {
        (0, 0, 0) => format!("{seconds}s"),
        (0, 0, m) => format!("{m}m"),
        (0, h, 0) => format!("{h}h"),
        (0, h, m) => format!("{h}h {m}m"),
        (d, 0, _) => format!("{d}d"),
        (d, h, _) => format!("{d}d {h}h"),
    }
}

/// `value`, or `-` when absent.
pub fn or_dash(value: Option<&str>) -> String {
    value.unwrap_or("-").to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_align_columns_and_trim_the_last() {
        let mut table = Table::new(&["ID", "STATUS", "TOOL"]);
        table.row(vec!["apr_1".into(), "pending".into(), "email.send".into()]);
        table.row(vec!["apr_22".into(), "ok".into(), "x".into()]);
        assert_eq!(
            table.render(),
            "ID      STATUS   TOOL\napr_1   pending  email.send\napr_22  ok       x\n"
        );
    }

    #[test]
    fn fields_skip_empty_values() {
        let text = fields(&[
            ("id", "a".into()),
            ("rule", String::new()),
            ("deadline", "b".into()),
        ]);
        assert_eq!(text, "id        a\ndeadline  b\n");
    }

    #[test]
    fn durations_show_two_units() {
        assert_eq!(short_duration(42), "42s");
        assert_eq!(short_duration(3 * 3600 + 20 * 60 + 5), "3h 20m");
        assert_eq!(short_duration(86_400 * 2 + 3600 * 4), "2d 4h");
        assert_eq!(short_duration(7200), "2h");
    }

    #[test]
    fn truncation_marks_the_cut() {
        assert_eq!(truncate("hello\nworld", 20), "hello world");
        assert_eq!(truncate("abcdef", 4), "abc…");
    }
}
