//! Text a child process writes to a pipe, collected by a reader thread as it arrives;
//! shared by the `cli` and `reliability` test binaries.
//!
//! A child that has exited can still have its last lines in the pipe, unread: its exit
//! says nothing about when the reader thread gets to run. So whoever looks at a finished
//! child's output calls [`Captured::drain`] first, which waits until the reader has seen
//! the end of the pipe. Without it a test that waited for the exit and then looked for
//! the child's last words ("failpoint reached") failed about once in four runs.

use std::io::Read;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// How long [`Captured::drain`] waits for the end of a pipe after the child exited. The
/// end comes at once unless a grandchild inherited the pipe; this is the backstop that
/// reports such a leak, never the condition waited for.
const DRAIN_BACKSTOP: Duration = Duration::from_secs(30);

#[derive(Clone, Default)]
pub struct Captured(Arc<Shared>);

#[derive(Default)]
struct Shared {
    text: Mutex<String>,
    /// Whether the reader has seen the end of the pipe.
    ended: Mutex<bool>,
    signal: Condvar,
    /// Keep only about this many bytes, the newest (`None`: everything).
    tail: Option<usize>,
}

impl Captured {
    /// Keeps only the last `bytes` or so: a soak writes a lot of log.
    #[allow(dead_code)] // the reliability binary uses it, the cli binary does not
    pub fn keeping_tail(bytes: usize) -> Captured {
        Captured(Arc::new(Shared {
            tail: Some(bytes),
            ..Shared::default()
        }))
    }

    /// Reads `pipe` to its end on a new thread.
    pub fn collect(&self, mut pipe: impl Read + Send + 'static) {
        let shared = self.0.clone();
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            while let Ok(read) = pipe.read(&mut buffer) {
                if read == 0 {
                    break;
                }
                let chunk = String::from_utf8_lossy(&buffer[..read]).into_owned();
                let mut text = shared.text.lock().unwrap();
                text.push_str(&chunk);
                if let Some(tail) = shared.tail {
                    if text.len() > tail * 2 {
                        let cut = text.len() - tail;
                        let cut = (cut..text.len())
                            .find(|i| text.is_char_boundary(*i))
                            .unwrap_or(0);
                        text.drain(..cut);
                    }
                }
            }
            *shared.ended.lock().unwrap() = true;
            shared.signal.notify_all();
        });
    }

    /// Waits until the reader has read the pipe to its end; call it once the child has
    /// exited. Fails when the pipe is still open after the backstop (a grandchild holds it).
    pub fn drain(&self) {
        assert!(
            self.drain_within(DRAIN_BACKSTOP),
            "the child's output was not closed {DRAIN_BACKSTOP:?} after it exited \
             (a process it started still holds it?)"
        );
    }

    /// [`Captured::drain`] without the failure: whether the end came within `limit`. For
    /// output only shown in a failure message, which a surviving grandchild may hold open.
    #[allow(dead_code)] // the cli binary uses it, the reliability binary does not
    pub fn drain_within(&self, limit: Duration) -> bool {
        let ended = self.0.ended.lock().unwrap();
        let (ended, _) = self
            .0
            .signal
            .wait_timeout_while(ended, limit, |ended| !*ended)
            .unwrap();
        *ended
    }

    /// What was read so far (after [`Captured::drain`]: everything).
    pub fn text(&self) -> String {
        self.0.text.lock().unwrap().clone()
    }
}
