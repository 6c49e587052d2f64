//! A small terminal screen: enough of what an xterm does with the bytes a TUI writes
//! (cursor moves, erasing, scroll regions, the alternate screen) to know what text is
//! where, so that a test can wait for "what the person would see". Colours, modes and
//! queries other than the cursor position are read and ignored.

/// The cells, the cursor, and the scroll region.
pub struct Screen {
    rows: usize,
    columns: usize,
    cells: Vec<Vec<char>>,
    row: usize,
    /// May equal `columns`: the next character wraps first (as xterm defers the wrap).
    column: usize,
    top: usize,
    bottom: usize,
    saved: (usize, usize),
    /// The start of a sequence or character split across reads.
    pending: Vec<u8>,
}

impl Screen {
    pub fn new(rows: usize, columns: usize) -> Screen {
        Screen {
            rows,
            columns,
            cells: vec![vec![' '; columns]; rows],
            row: 0,
            column: 0,
            top: 0,
            bottom: rows - 1,
            saved: (0, 0),
            pending: Vec::new(),
        }
    }

    /// The screen, one line per row, without trailing blanks.
    pub fn text(&self) -> String {
        let lines: Vec<String> = self
            .cells
            .iter()
            .map(|row| row.iter().collect::<String>().trim_end().to_owned())
            .collect();
        lines.join("\n")
    }

    /// Applies what the TUI wrote; returns the answers to its cursor-position queries
    /// (`ESC[6n`), in order, as the terminal's reply bytes.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<Vec<u8>> {
        let mut data = std::mem::take(&mut self.pending);
        data.extend_from_slice(bytes);
        let mut answers = Vec::new();
        let mut at = 0;
        while at < data.len() {
            let used = match data[at] {
                0x1b => self.escape(&data[at..], &mut answers),
                b'\r' => {
                    self.column = 0;
                    Some(1)
                }
                b'\n' | 0x0b | 0x0c => {
                    self.line_feed();
                    Some(1)
                }
                0x08 => {
                    self.column = self.column.min(self.columns - 1).saturating_sub(1);
                    Some(1)
                }
                b'\t' => {
                    self.column = ((self.column / 8 + 1) * 8).min(self.columns - 1);
                    Some(1)
                }
                0..=0x1f | 0x7f => Some(1),
                _ => self.character(&data[at..]),
            };
            match used {
                Some(used) => at += used,
                None => {
                    self.pending = data[at..].to_vec();
                    break;
                }
            }
        }
        answers
    }

    /// One UTF-8 character at the start of `data` (`None`: it is cut off).
    fn character(&mut self, data: &[u8]) -> Option<usize> {
        let length = match data[0] {
            0xc0..=0xdf => 2,
            0xe0..=0xef => 3,
            0xf0..=0xf7 => 4,
            _ => 1,
        };
        if data.len() < length {
            return None;
        }
        let c = std::str::from_utf8(&data[..length])
            .ok()
            .and_then(|text| text.chars().next())
            .unwrap_or('\u{fffd}');
        if self.column >= self.columns {
            self.column = 0;
            self.line_feed();
        }
        self.cells[self.row][self.column] = c;
        self.column += 1;
        Some(length)
    }

    /// An escape sequence at the start of `data`; `None` when it is cut off.
    fn escape(&mut self, data: &[u8], answers: &mut Vec<Vec<u8>>) -> Option<usize> {
        let kind = *data.get(1)?;
        match kind {
            b'[' => {
                let end = data[2..].iter().position(|b| (0x40..=0x7e).contains(b))? + 2;
                self.control(&data[2..end], data[end], answers);
                Some(end + 1)
            }
            // OSC, DCS, APC, PM: up to BEL or ST (ESC \).
            b']' | b'P' | b'_' | b'^' => {
                let mut at = 2;
                loop {
                    match data.get(at)? {
                        0x07 => return Some(at + 1),
                        0x1b if *data.get(at + 1)? == b'\\' => return Some(at + 2),
                        _ => at += 1,
                    }
                }
            }
            b'(' | b')' | b'*' | b'+' | b'#' => data.get(2).map(|_| 3),
            b'7' => {
                self.saved = (self.row, self.column);
                Some(2)
            }
            b'8' => {
                (self.row, self.column) = self.saved;
                Some(2)
            }
            b'D' => {
                self.line_feed();
                Some(2)
            }
            b'E' => {
                self.column = 0;
                self.line_feed();
                Some(2)
            }
            b'M' => {
                if self.row == self.top {
                    self.scroll_down(1);
                } else {
                    self.row = self.row.saturating_sub(1);
                }
                Some(2)
            }
            _ => Some(2),
        }
    }

    /// A control sequence `ESC [ params final`.
    fn control(&mut self, params: &[u8], last: u8, answers: &mut Vec<Vec<u8>>) {
        let text = String::from_utf8_lossy(params);
        if let Some(private) = text.strip_prefix('?') {
            // The alternate screen starts (and the main one comes back) blank here.
            if private
                .split(';')
                .any(|mode| mode == "1049" || mode == "47")
            {
                self.erase(0, self.rows);
                self.row = 0;
                self.column = 0;
            }
            return;
        }
        if text.starts_with(['>', '<', '=']) {
            return;
        }
        let numbers: Vec<usize> = text.split(';').map(|n| n.parse().unwrap_or(0)).collect();
        let n = |i: usize| numbers.get(i).copied().unwrap_or(0);
        let count = n(0).max(1);
        let (rows, columns) = (self.rows, self.columns);
        match last {
            b'H' | b'f' => {
                self.row = (n(0).max(1) - 1).min(rows - 1);
                self.column = (n(1).max(1) - 1).min(columns - 1);
            }
            b'A' => self.row = self.row.saturating_sub(count),
            b'B' => self.row = (self.row + count).min(rows - 1),
            b'C' => self.column = (self.column + count).min(columns - 1),
            b'D' => self.column = self.column.min(columns - 1).saturating_sub(count),
            b'E' => (self.row, self.column) = ((self.row + count).min(rows - 1), 0),
            b'F' => (self.row, self.column) = (self.row.saturating_sub(count), 0),
            b'G' | b'`' => self.column = (count - 1).min(columns - 1),
            b'd' => self.row = (count - 1).min(rows - 1),
            b'K' => {
                let column = self.column.min(columns);
                let line = &mut self.cells[self.row];
                let (from, to) = match n(0) {
                    0 => (column, columns),
                    1 => (0, (column + 1).min(columns)),
                    _ => (0, columns),
                };
                line[from..to].fill(' ');
            }
            b'J' => match n(0) {
                0 => {
                    let column = self.column.min(columns);
                    self.cells[self.row][column..].fill(' ');
                    self.erase(self.row + 1, rows);
                }
                1 => {
                    self.erase(0, self.row);
                    let column = (self.column + 1).min(columns);
                    self.cells[self.row][..column].fill(' ');
                }
                _ => self.erase(0, rows),
            },
            b'X' => {
                let column = self.column.min(columns);
                let to = (column + count).min(columns);
                self.cells[self.row][column..to].fill(' ');
            }
            b'P' => {
                let column = self.column.min(columns - 1);
                let line = &mut self.cells[self.row];
                for _ in 0..count.min(columns - column) {
                    line.remove(column);
                    line.push(' ');
                }
            }
            b'@' => {
                let column = self.column.min(columns - 1);
                let line = &mut self.cells[self.row];
                for _ in 0..count.min(columns - column) {
                    line.insert(column, ' ');
                    line.pop();
                }
            }
            b'r' => {
                let top = n(0).max(1) - 1;
                let bottom = if n(1) == 0 { rows } else { n(1).min(rows) } - 1;
                if top < bottom {
                    (self.top, self.bottom) = (top, bottom);
                }
                (self.row, self.column) = (0, 0);
            }
            b'S' => self.scroll_up(count),
            b'T' => self.scroll_down(count),
            b'L' | b'M' if (self.top..=self.bottom).contains(&self.row) => {
                let saved_top = self.top;
                self.top = self.row;
                if last == b'L' {
                    self.scroll_down(count);
                } else {
                    self.scroll_up(count);
                }
                self.top = saved_top;
            }
            b's' => self.saved = (self.row, self.column),
            b'u' => (self.row, self.column) = self.saved,
            b'n' if n(0) == 6 => answers.push(
                format!(
                    "\x1b[{};{}R",
                    self.row + 1,
                    self.column.min(columns - 1) + 1
                )
                .into_bytes(),
            ),
            _ => {}
        }
    }

    fn line_feed(&mut self) {
        if self.row == self.bottom {
            self.scroll_up(1);
        } else if self.row + 1 < self.rows {
            self.row += 1;
        }
    }

    /// Moves the lines of the scroll region up by `count`, blank lines entering below.
    fn scroll_up(&mut self, count: usize) {
        for _ in 0..count.min(self.bottom - self.top + 1) {
            self.cells.remove(self.top);
            self.cells.insert(self.bottom, vec![' '; self.columns]);
        }
    }

    /// Moves the lines of the scroll region down by `count`, blank lines entering above.
    fn scroll_down(&mut self, count: usize) {
        for _ in 0..count.min(self.bottom - self.top + 1) {
            self.cells.remove(self.bottom);
            self.cells.insert(self.top, vec![' '; self.columns]);
        }
    }

    /// Blanks rows `from..to`.
    fn erase(&mut self, from: usize, to: usize) {
        for row in &mut self.cells[from.min(self.rows)..to.min(self.rows)] {
            row.fill(' ');
        }
    }
}

#[test]
fn a_tui_redraw_reads_as_its_text() {
    let mut screen = Screen::new(4, 20);
    // "Hooks need review" drawn whole, then redrawn as "Hooks need a look" with only the
    // changed cells written, as ratatui does.
    screen.feed(b"\x1b[2;1HHooks need review");
    screen.feed(b"\x1b[2;12Ha\x1b[1X\x1b[2;14Hlook");
    assert_eq!(screen.text(), "\nHooks need a look\n\n");
    let answers = screen.feed(b"\x1b[3;5H\x1b[6n");
    assert_eq!(answers, vec![b"\x1b[3;5R".to_vec()]);
    // Split across reads, mid-sequence and mid-character.
    screen.feed(b"\x1b[1");
    screen.feed(b";1H\xe2\x80");
    screen.feed(b"\xba ok\r\n");
    assert!(screen.text().starts_with("› ok"), "{}", screen.text());
}
