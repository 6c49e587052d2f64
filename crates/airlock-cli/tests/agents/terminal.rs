//! An agent's interactive TUI under a pseudo-terminal, for the tests that drive it as a
//! person would: type keys, read the screen.
//!
//! The pty is opened in-process (`nix::pty::openpty`, a safe call) rather than through
//! `script(1)` or Python's `pty`: the test then owns both ends, so it can give the terminal
//! a size (a pty that `script` opens without a terminal of its own is 0×0, and a TUI draws
//! nothing there), answer the TUI's cursor-position queries (`ESC[6n`; crossterm waits for
//! the reply, here where the screen's cursor is), and needs nothing on the CI machine beyond the agent itself. The agent runs
//! in its own process group, so that a developer's terminal never reaches it and the
//! whole group (the agent and the hooks it started) is killed at the end.
//!
//! What the TUI shows is kept on a small screen ([`crate::screen::Screen`]): a TUI redraws
//! only the cells that changed, so the text "Hooks need review" may never be written in
//! one piece, and only a screen shows it.

use crate::screen::Screen;
use nix::pty::{openpty, Winsize};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The terminal's size, rows × columns.
const ROWS: u16 = 40;
const COLUMNS: u16 = 120;

/// An agent running under a pseudo-terminal; killed, with its process group, when dropped.
pub struct Terminal {
    child: Mutex<Child>,
    keyboard: Arc<Mutex<File>>,
    screen: Arc<Mutex<Screen>>,
}

impl Terminal {
    /// Starts `command` with a pseudo-terminal as its stdin, stdout and stderr.
    pub fn start(mut command: Command) -> Terminal {
        let size = Winsize {
            ws_row: ROWS,
            ws_col: COLUMNS,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        let pty = openpty(&size, None).unwrap();
        let slave = File::from(pty.slave);
        command
            .env("TERM", "xterm-256color")
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave))
            .process_group(0);
        let child = command
            .spawn()
            .unwrap_or_else(|e| panic!("{command:?}: {e}"));
        // Our copies of the slave end go with `command`, so that the master's reads end
        // when the agent's side closes.
        drop(command);
        let master = File::from(pty.master);
        let keyboard = Arc::new(Mutex::new(master.try_clone().unwrap()));
        let screen = Arc::new(Mutex::new(Screen::new(
            usize::from(ROWS),
            usize::from(COLUMNS),
        )));
        let (shown, answer) = (screen.clone(), keyboard.clone());
        std::thread::spawn(move || read_screen(master, &shown, &answer));
        Terminal {
            child: Mutex::new(child),
            keyboard,
            screen,
        }
    }

    /// Types `keys` (a control key is its byte: `"\r"` is Enter).
    pub fn keys(&self, keys: &str) {
        let mut keyboard = self.keyboard.lock().unwrap();
        // A write fails only once the agent is gone, which the waits report.
        let _ = keyboard.write_all(keys.as_bytes());
        let _ = keyboard.flush();
    }

    /// Whether the agent has exited.
    pub fn exited(&self) -> bool {
        matches!(self.child.lock().unwrap().try_wait(), Ok(Some(_)))
    }

    /// Pastes `text` as a terminal does (bracketed paste), so that the TUI takes it as one
    /// piece and never mistakes a fast run of characters for anything else.
    pub fn paste(&self, text: &str) {
        self.keys(&format!("\x1b[200~{text}\x1b[201~"));
    }

    /// The screen now, row by row.
    pub fn screen(&self) -> String {
        self.screen.lock().unwrap().text()
    }

    /// Whether the screen shows `text` now (whitespace ignored).
    pub fn shows(&self, text: &str) -> bool {
        let wanted: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let shown: String = self
            .screen()
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        shown.contains(&wanted)
    }

    /// Waits until the screen shows `text`.
    pub fn wait_for(&self, text: &str, limit: Duration) {
        self.wait_until(limit, text, || self.shows(text));
    }

    /// Types `keys` until the screen shows `text`, again every second: for keys that are
    /// harmless to repeat, typed at a TUI that may not be reading its keyboard yet.
    /// `false`: the agent exited first.
    pub fn press_until(&self, limit: Duration, keys: &str, text: &str) -> bool {
        let until = Instant::now() + limit;
        loop {
            if self.exited() {
                return false;
            }
            self.keys(keys);
            let again = Instant::now() + Duration::from_secs(1);
            while Instant::now() < again {
                if self.shows(text) {
                    return true;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            assert!(
                Instant::now() < until,
                "typing {keys:?} never showed {text}; the screen:\n{}",
                self.screen()
            );
        }
    }

    /// Waits for `condition`, failing with `what` and the screen after `limit` or when
    /// the agent exits first.
    pub fn wait_until(&self, limit: Duration, what: &str, condition: impl FnMut() -> bool) {
        assert!(
            self.until_or_exit(limit, what, condition),
            "the agent exited while waiting for {what}; the screen:\n{}",
            self.screen()
        );
    }

    /// Waits for `condition`; `false` when the agent exited first. Fails with `what` and
    /// the screen after `limit`.
    pub fn until_or_exit(
        &self,
        limit: Duration,
        what: &str,
        mut condition: impl FnMut() -> bool,
    ) -> bool {
        let until = Instant::now() + limit;
        loop {
            if condition() {
                return true;
            }
            if self.exited() {
                // What it wrote last may be what was waited for.
                return condition();
            }
            assert!(
                Instant::now() < until,
                "timed out waiting for {what}; the screen:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let Ok(child) = self.child.get_mut() else {
            return;
        };
        if let Ok(id) = i32::try_from(child.id()) {
            let _ = killpg(Pid::from_raw(id), Signal::SIGKILL);
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// Draws what the TUI writes, and answers its cursor-position queries.
fn read_screen(mut master: File, screen: &Mutex<Screen>, keyboard: &Mutex<File>) {
    let mut chunk = [0u8; 16 * 1024];
    // A read error (EIO) is the agent's side closing: the end of the screen.
    while let Ok(read) = master.read(&mut chunk) {
        if read == 0 {
            break;
        }
        let answers = screen.lock().unwrap().feed(&chunk[..read]);
        for answer in answers {
            let _ = keyboard.lock().unwrap().write_all(&answer);
        }
    }
}
