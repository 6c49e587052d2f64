//! Verifying an NDJSON export as it is read: the file is cut into blocks of whole lines,
//! the blocks are checked on every core while the next ones are read, and the results
//! are linked in order on the reading thread.
//!
//! Reading a whole export before checking it cost a third of the time at a million
//! records (about 1 GB read and UTF-8 checked on one thread while the others waited), and
//! memory as large as the file. Here the reader stays ahead of the checkers by a few
//! blocks, so memory is bounded by those blocks, whatever the file's size.
//!
//! The buffers go round: a checked block's bytes and a linked block's results are handed
//! back for the next blocks, so that reading a million records does not map, fault in and
//! unmap fresh memory for every block (that kernel work was a tenth of the file path).
//!
//! The verdict is the one the whole-text reading gave: lines are the non-blank lines of
//! the text; a last line without its newline (or that is not a record) is a torn tail,
//! never checked as a record; an unreadable line elsewhere is a break at that position.

use super::check::{threads, Checked, Scratch};
use super::{ChainVerifier, VerifyReport};
use std::collections::BTreeMap;
use std::io::{self, Read};
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender};
use std::sync::Mutex;

/// Bytes per block handed to a checker: a few thousand records, so that handing blocks
/// over is noise, and few enough in flight that memory stays small.
const BLOCK: usize = 4 << 20;

/// Buffers kept for reuse beyond this many are dropped: at most the blocks in flight.
const SPARE: usize = 32;

/// Buffers handed back for reuse: blocks' bytes (by the checkers, to the reader) and
/// blocks' results (by the linker, to the checkers).
#[derive(Default)]
struct Spares {
    blocks: Mutex<Vec<Vec<u8>>>,
    items: Mutex<Vec<Vec<Item>>>,
}

impl Spares {
    fn block(&self) -> Vec<u8> {
        let spare = self.blocks.lock().ok().and_then(|mut blocks| blocks.pop());
        let mut block = spare.unwrap_or_default();
        block.clear();
        block
    }

    fn give_block(&self, block: Vec<u8>) {
        if let Ok(mut blocks) = self.blocks.lock() {
            if blocks.len() < SPARE {
                blocks.push(block);
            }
        }
    }

    fn items(&self) -> Vec<Item> {
        let spare = self.items.lock().ok().and_then(|mut items| items.pop());
        spare.unwrap_or_default()
    }

    fn give_items(&self, mut items: Vec<Item>) {
        items.clear();
        if let Ok(mut spare) = self.items.lock() {
            if spare.len() < SPARE {
                spare.push(items);
            }
        }
    }
}

/// One non-blank line's result, owned so it can cross threads.
enum Item {
    Checked(Checked<'static>),
    /// Not a record (or not UTF-8): why. The line number is added in order.
    Unreadable(String),
}

/// Verifies the export `reader` yields. An error reading it is an error, not a verdict.
pub(super) fn verify_reader(reader: impl Read) -> io::Result<VerifyReport> {
    verify_in_blocks(Source::Reader(reader, Vec::new()), BLOCK)
}

/// Verifies an export already in memory, cut into blocks without copying it.
pub(super) fn verify_text(text: &[u8]) -> VerifyReport {
    let source: Source<'_, io::Empty> = Source::Text(text);
    match verify_in_blocks(source, BLOCK) {
        Ok(report) => report,
        // Cutting text in memory reads nothing that can fail; if it did, nothing was
        // verified.
        Err(error) => ChainVerifier::failed(format!("the export could not be read: {error}")),
    }
}

/// Where the blocks come from: text in memory (borrowed) or a reader (each block owned;
/// the `Vec` holds what was read past the last newline).
enum Source<'a, R> {
    Text(&'a [u8]),
    Reader(R, Vec<u8>),
}

/// A block of whole lines (the last block may end without its newline).
enum Block<'a> {
    Borrowed(&'a [u8]),
    Owned(Vec<u8>),
}

impl Block<'_> {
    fn bytes(&self) -> &[u8] {
        match self {
            Block::Borrowed(bytes) => bytes,
            Block::Owned(bytes) => bytes,
        }
    }
}

impl<'a, R: Read> Source<'a, R> {
    /// The next block of about `size` bytes cut after a newline, `None` at the end;
    /// `last_byte` keeps the text's last byte (whether it ended with a newline). A block
    /// read is read into a spare buffer when there is one.
    fn next(
        &mut self,
        size: usize,
        last_byte: &mut Option<u8>,
        spares: &Spares,
    ) -> io::Result<Option<Block<'a>>> {
        let size = size.max(1);
        match self {
            Source::Text(text) => {
                if text.is_empty() {
                    return Ok(None);
                }
                *last_byte = text.last().copied();
                let end = match text.get(size..) {
                    None => text.len(),
                    Some(rest) => {
                        memchr::memchr(b'\n', rest).map_or(text.len(), |at| size + at + 1)
                    }
                };
                let (block, rest) = text.split_at(end);
                *text = rest;
                Ok(Some(Block::Borrowed(block)))
            }
            Source::Reader(reader, carried) => {
                let mut buffer = spares.block();
                buffer.extend_from_slice(carried);
                carried.clear();
                loop {
                    let read = read_some(reader, &mut buffer, size)?;
                    if read == 0 {
                        return Ok((!buffer.is_empty()).then_some(Block::Owned(buffer)));
                    }
                    *last_byte = buffer.last().copied();
                    if buffer.len() < size {
                        continue;
                    }
                    // Everything up to the last newline is the block; the rest starts the
                    // next one. A line longer than a block grows this one until it ends.
                    if let Some(end) = memchr::memrchr(b'\n', &buffer) {
                        carried.extend_from_slice(buffer.get(end + 1..).unwrap_or_default());
                        buffer.truncate(end + 1);
                        return Ok(Some(Block::Owned(buffer)));
                    }
                }
            }
        }
    }
}

/// Appends up to `size` bytes from `reader` to `buffer` (retrying interrupted reads);
/// how many were read, 0 at the end.
fn read_some(reader: &mut impl Read, buffer: &mut Vec<u8>, size: usize) -> io::Result<usize> {
    loop {
        match reader.by_ref().take(size as u64).read_to_end(buffer) {
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            result => return result,
        }
    }
}

fn verify_in_blocks<'a, R: Read>(
    mut source: Source<'a, R>,
    size: usize,
) -> io::Result<VerifyReport> {
    let mut last_byte = None;
    let complete = |last_byte: Option<u8>| last_byte.is_none_or(|byte| byte == b'\n');
    let mut linker = Linker::default();
    let spares = Spares::default();
    let Some(first) = source.next(size, &mut last_byte, &spares)? else {
        return Ok(linker.finish(true));
    };
    let Some(second) = source.next(size, &mut last_byte, &spares)? else {
        // One block (a short export): checked here, without threads.
        let mut items = Vec::new();
        check_block(&mut Scratch::default(), first.bytes(), &mut items);
        linker.accept(&mut items);
        return Ok(linker.finish(complete(last_byte)));
    };
    let threads = threads();
    let (blocks_in, blocks_out) = sync_channel::<(usize, Block<'a>)>(threads * 2);
    let blocks_out = Mutex::new(blocks_out);
    let (results_in, results_out) = channel::<(usize, Vec<Item>)>();
    let spares = &spares;
    std::thread::scope(|scope| {
        for _ in 0..threads {
            let results_in = results_in.clone();
            let blocks_out = &blocks_out;
            scope.spawn(move || check_blocks(blocks_out, &results_in, spares));
        }
        drop(results_in);
        let mut next = Some(second);
        let mut block = first;
        let read = loop {
            // A send fails only when every checker is gone; the blocks they never
            // finished make the verdict fail below.
            let _ = blocks_in.send((linker.blocks_sent, block));
            linker.blocks_sent += 1;
            linker.take_ready(&results_out, false, spares);
            match next.take() {
                Some(following) => block = following,
                None => break Ok(()),
            }
            match source.next(size, &mut last_byte, spares) {
                Ok(following) => next = following,
                Err(error) => break Err(error),
            }
        };
        drop(blocks_in);
        read?;
        linker.take_ready(&results_out, true, spares);
        Ok(linker.finish(complete(last_byte)))
    })
}

/// The results of one block's non-blank lines, in order, into `items`. A line as the
/// server exports it is checked without reading its `data` (`Scratch::check_exported`);
/// any other line, or one whose hash does not match that way, the general way.
fn check_block(scratch: &mut Scratch, bytes: &[u8], items: &mut Vec<Item>) {
    items.extend(lines(bytes).filter_map(|line| {
        if let Some(checked) = scratch.check_exported(line) {
            return Some(Item::Checked(checked));
        }
        match std::str::from_utf8(line) {
            Ok(line) if line.trim().is_empty() => None,
            Ok(line) => Some(match scratch.check_line(line) {
                Checked::Unreadable(problem) => Item::Unreadable(problem),
                checked => Item::Checked(checked.into_owned()),
            }),
            Err(_) => Some(Item::Unreadable("the line is not UTF-8".to_owned())),
        }
    }));
}

/// The text between newlines, as `split` gives it (the part after the last newline
/// too, empty when the text ends with one), found with `memchr`: a closure per byte was
/// a sixth of the file path.
fn lines(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut start = 0;
    memchr::memchr_iter(b'\n', bytes)
        .map(Some)
        .chain([None])
        .map(move |end| {
            let end = end.unwrap_or(bytes.len());
            let line = bytes.get(start..end).unwrap_or_default();
            start = end + 1;
            line
        })
}

/// A checker thread: takes blocks until there are none, checks each line of each.
fn check_blocks(
    blocks: &Mutex<Receiver<(usize, Block<'_>)>>,
    results: &Sender<(usize, Vec<Item>)>,
    spares: &Spares,
) {
    let mut scratch = Scratch::default();
    loop {
        let next = match blocks.lock() {
            Ok(receiver) => receiver.recv(),
            Err(_) => return,
        };
        let Ok((index, block)) = next else { return };
        let mut items = spares.items();
        check_block(&mut scratch, block.bytes(), &mut items);
        if let Block::Owned(bytes) = block {
            spares.give_block(bytes);
        }
        if results.send((index, items)).is_err() {
            return;
        }
    }
}

/// Feeds the blocks' results to the chain in block order, one item behind, so that the
/// last item can be told apart when the text ends.
#[derive(Default)]
struct Linker {
    verifier: ChainVerifier,
    early: BTreeMap<usize, Vec<Item>>,
    next_block: usize,
    blocks_sent: usize,
    /// Non-blank lines fed so far (for "line N" in a problem).
    lines: usize,
    held: Option<Item>,
}

impl Linker {
    /// Takes what the checkers have finished; `all`: wait for every block handed over.
    fn take_ready(&mut self, results: &Receiver<(usize, Vec<Item>)>, all: bool, spares: &Spares) {
        loop {
            let next = if all && self.next_block + self.early.len() < self.blocks_sent {
                results.recv().ok()
            } else {
                results.try_recv().ok()
            };
            let Some((index, items)) = next else { break };
            self.early.insert(index, items);
            while let Some(mut items) = self.early.remove(&self.next_block) {
                self.next_block += 1;
                self.accept(&mut items);
                spares.give_items(items);
            }
        }
    }

    /// Takes the next block's results, in order (leaving `items` empty).
    fn accept(&mut self, items: &mut Vec<Item>) {
        for item in items.drain(..) {
            if let Some(held) = self.held.replace(item) {
                self.feed(held);
            }
        }
    }

    fn feed(&mut self, item: Item) {
        self.lines += 1;
        match item {
            Item::Checked(checked) => self.verifier.push_checked(checked),
            Item::Unreadable(problem) => self.verifier.unreadable(format!(
                "line {}: not an audit record: {problem}",
                self.lines
            )),
        }
    }

    /// The verdict once the text has ended (`complete`: with a newline).
    fn finish(mut self, complete: bool) -> VerifyReport {
        // Blocks a dead checker never finished: their lines cannot count as verified.
        if self.next_block < self.blocks_sent {
            self.verifier
                .unreadable("a verification thread failed before the end".to_owned());
            return self.verifier.finish(false);
        }
        let torn = match self.held.take() {
            None => false,
            Some(_) if !complete => true,
            Some(Item::Unreadable(_)) => true,
            Some(last) => {
                self.feed(last);
                false
            }
        };
        self.verifier.finish(torn)
    }
}

/// The verdict on `text` cut into blocks of about `size` bytes, borrowed or (`read`)
/// read through a reader that hands over three bytes at a time.
#[cfg(test)]
pub(super) fn verify_in_blocks_for_tests(text: &[u8], size: usize, read: bool) -> VerifyReport {
    struct Trickle<'a>(&'a [u8]);
    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let take = self.0.len().min(out.len()).min(3);
            out[..take].copy_from_slice(&self.0[..take]);
            self.0 = &self.0[take..];
            Ok(take)
        }
    }
    let result = if read {
        verify_in_blocks(Source::Reader(Trickle(text), Vec::new()), size)
    } else {
        verify_in_blocks(Source::<io::Empty>::Text(text), size)
    };
    result.unwrap_or_else(|error| ChainVerifier::failed(error.to_string()))
}
