//! The verifier's tests: chains edited, cut, reordered and garbled, and the fast path
//! (text → canonical bytes) held against the general one (`Value` trees) on every
//! single-byte edit of an export.

#![allow(clippy::unwrap_used)]
use super::*;
use airlock_digest::canonical::to_canonical_bytes;
use airlock_policy::digest::audit_hash;
use serde_json::json;

/// A valid chain of `n` records, as an export would hold it.
fn chain(n: u64) -> Vec<AuditRecord> {
    let mut records = Vec::new();
    let mut prev = GENESIS_HASH.to_owned();
    for seq in 1..=n {
        let mut record = AuditRecord {
            seq,
            at: format!("2026-11-30T10:00:{seq:02}Z"),
            actor: "system".into(),
            kind: "call.allowed".into(),
            subject: format!("call_{seq}"),
            data: json!({"n": seq}),
            prev_hash: prev.clone(),
            hash: String::new(),
        };
        record.hash = audit_hash(&prev, &serde_json::to_value(&record).unwrap());
        prev = record.hash.clone();
        records.push(record);
    }
    records
}

fn export(records: &[AuditRecord]) -> String {
    records
        .iter()
        .map(|r| serde_json::to_string(r).unwrap() + "\n")
        .collect()
}

#[test]
fn an_intact_chain_verifies_with_its_head() {
    let records = chain(5);
    let report = verify_export(&export(&records));
    assert!(report.ok, "{report:?}");
    assert_eq!(report.records, 5);
    assert_eq!(report.head.unwrap().hash, records[4].hash);
    assert!(verify_export("").ok);
}

#[test]
fn an_edited_record_is_located() {
    let mut records = chain(5);
    records[2].data = json!({"n": 99});
    assert_eq!(verify_export(&export(&records)).first_bad_seq, Some(3));
}

#[test]
fn an_edited_record_with_a_recomputed_hash_breaks_the_next_link() {
    let mut records = chain(5);
    records[2].data = json!({"n": 99});
    records[2].hash = audit_hash(
        &records[2].prev_hash,
        &serde_json::to_value(&records[2]).unwrap(),
    );
    assert_eq!(verify_export(&export(&records)).first_bad_seq, Some(4));
}

#[test]
fn a_deleted_record_is_located() {
    let mut records = chain(5);
    records.remove(1);
    let report = verify_export(&export(&records));
    assert_eq!(report.first_bad_seq, Some(2), "{report:?}");
    assert!(!report.ok);
}

#[test]
fn reordered_records_are_located() {
    let mut records = chain(5);
    records.swap(2, 3);
    assert_eq!(verify_export(&export(&records)).first_bad_seq, Some(3));
}

#[test]
fn a_torn_last_line_is_reported_apart_from_a_break() {
    let text = export(&chain(3));
    let torn = &text[..text.len() - 10];
    let report = verify_export(torn);
    assert!(!report.ok && report.torn_tail, "{report:?}");
    assert_eq!(report.first_bad_seq, None);
    assert_eq!(report.records, 2);
    // A complete last record without its newline was never finished either.
    let report = verify_export(text.trim_end());
    assert!(report.torn_tail && !report.ok);
}

#[test]
fn a_garbled_line_in_the_middle_is_a_break() {
    let records = chain(3);
    let text = format!(
        "{}not json\n{}",
        export(&records[..1]),
        export(&records[1..])
    );
    let report = verify_export(&text);
    assert_eq!(report.first_bad_seq, Some(2), "{report:?}");
}

#[test]
fn cursors_past_the_largest_sequence_mean_the_largest() {
    assert_eq!(seq_bound(0), 0);
    assert_eq!(seq_bound(42), 42);
    assert_eq!(seq_bound(u64::MAX), i64::MAX as u64);
    assert_eq!(seq_bound(i64::MAX as u64 + 1), i64::MAX as u64);
}

/// The verifier as it was before the fast path: every line parsed into a record, the
/// record turned into a `Value` and hashed. The fast one must agree with it on any text.
fn verify_export_by_values(text: &str) -> VerifyReport {
    let mut verifier = ChainVerifier::default();
    let complete = text.is_empty() || text.ends_with('\n');
    let lines: Vec<&str> = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .collect();
    let mut torn = false;
    for (index, line) in lines.iter().enumerate() {
        let last = index + 1 == lines.len();
        if last && !complete {
            torn = true;
            break;
        }
        match serde_json::from_str::<AuditRecord>(line) {
            Ok(record) => verifier.push(&record),
            Err(_) if last => torn = true,
            Err(error) => {
                verifier.unreadable(format!("line {}: not an audit record: {error}", index + 1))
            }
        }
    }
    verifier.finish(torn)
}

/// Records whose data exercises every shape the fast path copies or sorts, with their
/// data's members in the order written (not canonical: the canonicalizing path).
fn varied_chain() -> Vec<AuditRecord> {
    chain_of(varied_datas())
}

/// The same records with `data` in canonical order, as the store keeps it and exports
/// it: the path that hashes `data` as it lies.
fn varied_canonical_chain() -> Vec<AuditRecord> {
    chain_of(
        varied_datas()
            .iter()
            .map(|data| serde_json::from_slice(&to_canonical_bytes(data)).unwrap())
            .collect(),
    )
}

fn varied_datas() -> Vec<serde_json::Value> {
    vec![
        json!({"z": 1, "a": [true, false, null], "m": {"y": -12, "b": "q\"\\\n\t\u{1}é😀"}}),
        json!({}),
        json!({"\u{e000}": 1, "\u{1f600}": 2, "n": 1.5, "big": 12345678901234567890u64}),
        json!({"nested": [[[{"b": 1, "a": 2}]]], "s": "a/b"}),
    ]
}

fn chain_of(datas: Vec<serde_json::Value>) -> Vec<AuditRecord> {
    let mut records = Vec::new();
    let mut prev = GENESIS_HASH.to_owned();
    for (index, data) in datas.into_iter().enumerate() {
        let seq = index as u64 + 1;
        let mut record = AuditRecord {
            seq,
            at: format!("2026-11-30T10:00:{seq:02}Z"),
            actor: "user:\"odd\"\u{7}".into(),
            kind: "call.allowed".into(),
            subject: format!("call_{seq}"),
            data,
            prev_hash: prev.clone(),
            hash: String::new(),
        };
        record.hash = audit_hash(&prev, &serde_json::to_value(&record).unwrap());
        prev = record.hash.clone();
        records.push(record);
    }
    records
}

/// Every single-byte edit, of an export whose data is canonical (hashed as it lies) and
/// of one whose data is not (canonicalized first).
#[test]
fn the_fast_path_agrees_with_value_trees_on_every_single_byte_edit() {
    let canonical = export(&varied_canonical_chain());
    assert!(canonical.contains(r#""data":{"a":[true,false,null],"m":{"b""#));
    every_single_byte_edit_agrees(&canonical);
    every_single_byte_edit_agrees(&export(&varied_chain()));
}

fn every_single_byte_edit_agrees(text: &str) {
    assert!(verify_export(text).ok, "{:?}", verify_export(text));
    let bytes = text.as_bytes();
    let mut edits = 0;
    for position in 0..bytes.len() {
        for replacement in [b' ', b'x', b'0', b'"', b'\\', b'}', b'\n'] {
            if bytes[position] == replacement {
                continue;
            }
            let mut edited = bytes.to_vec();
            edited[position] = replacement;
            // An edit inside a multi-byte character is not text; files are read as text.
            let Ok(edited) = String::from_utf8(edited) else {
                continue;
            };
            let fast = verify_export(&edited);
            assert_eq!(
                fast,
                verify_export_by_values(&edited),
                "byte {position} -> {replacement:?}"
            );
            // Nothing is written without meaning: only a space at a space changes nothing
            // (and there is none), so every edit breaks the chain or tears the tail.
            assert!(!fast.ok, "byte {position} -> {replacement:?}: {fast:?}");
            edits += 1;
        }
    }
    assert!(edits > 5000, "{edits}");
}

#[test]
fn equivalent_texts_that_are_not_the_servers_verify_the_same_way() {
    let records = varied_chain();
    let mut text = String::new();
    for record in &records {
        // Keys reversed, spaces everywhere, `/` and a letter escaped: the same values.
        let value = serde_json::to_value(record).unwrap();
        let members: Vec<String> = value
            .as_object()
            .unwrap()
            .iter()
            .rev()
            .map(|(key, member)| format!(" {} : {} ", json!(key), member))
            .collect();
        let line = format!("{{ {} }}", members.join(" , "))
            .replace("call.allowed", "call\\u002eallowed")
            .replace("\"a/b\"", "\"a\\/b\"");
        text.push_str(&line);
        text.push('\n');
    }
    assert!(text.contains("\\u002e") && text.contains("\\/"));
    let report = verify_export(&text);
    assert!(report.ok, "{report:?}");
    assert_eq!(report, verify_export_by_values(&text));
    assert_eq!(report.head.unwrap().hash, records[3].hash);
}

#[test]
fn a_long_chain_checked_on_several_threads_locates_its_break() {
    let mut records = chain(40_000);
    let clean = export(&records);
    let report = verify_export(&clean);
    assert!(report.ok, "{report:?}");
    assert_eq!(report.records, 40_000);
    assert_eq!(report.head.as_ref().unwrap().hash, records[39_999].hash);
    // Past the first block (about 12 MB of 300-byte lines in 4 MiB blocks), where
    // another thread checks.
    records[31_234].data = json!({"n": 0});
    let report = verify_export(&export(&records));
    assert_eq!(report.first_bad_seq, Some(31_235));
    assert_eq!(report.records, 40_000);
    assert_eq!(report, verify_export_by_values(&export(&records)));
}

/// Exports cut at every kind of place: the verdict must not depend on where the blocks
/// end, nor on how the reader hands the bytes over.
#[test]
fn any_block_size_gives_the_same_verdict() {
    let records = chain(12);
    let clean = export(&records);
    let mut edited = records.clone();
    edited[6].data = json!({"n": 0});
    let texts = [
        clean.clone(),
        export(&edited),
        clean[..clean.len() - 10].to_owned(),
        clean.trim_end().to_owned(),
        format!("{clean}  \n\n"),
        format!("{clean}   "),
        clean.replace('\n', "\r\n"),
        format!(
            "{}not json\n{}",
            export(&records[..5]),
            export(&records[5..])
        ),
        format!("{}not json\n", export(&records[..5])),
        format!("\n\n{}", export(&records[..3])),
        String::new(),
        "\n".to_owned(),
    ];
    for text in &texts {
        let expected = verify_export_by_values(text);
        for block in [1, 2, 7, 64, 333, 4096, 1 << 20] {
            let report = export::verify_in_blocks_for_tests(text.as_bytes(), block, false);
            assert_eq!(report, expected, "block {block}: {text:?}");
            let report = export::verify_in_blocks_for_tests(text.as_bytes(), block, true);
            assert_eq!(report, expected, "read, block {block}: {text:?}");
        }
        assert_eq!(verify_export(text), expected);
    }
}

#[test]
fn a_line_that_is_not_utf8_is_a_break_and_a_read_error_is_an_error() {
    let records = chain(3);
    let mut bytes = export(&records[..1]).into_bytes();
    bytes.extend_from_slice(b"\xff\xfe\n");
    bytes.extend_from_slice(export(&records[1..]).as_bytes());
    let report = verify_export_from(bytes.as_slice()).unwrap();
    assert_eq!(report.first_bad_seq, Some(2), "{report:?}");
    assert!(report.problem.unwrap().contains("line 2"));

    struct Failing;
    impl std::io::Read for Failing {
        fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("disk gone"))
        }
    }
    assert!(verify_export_from(Failing).is_err());
}

#[test]
fn stored_rows_verify_like_the_records_they_hold() {
    let records = varied_chain();
    let rows = |records: &[AuditRecord]| {
        let mut rows = AuditRows::with_capacity(records.len());
        for record in records {
            let data = serde_json::to_string(&record.data).unwrap();
            rows.push(
                record.seq,
                [
                    &record.at,
                    &record.actor,
                    &record.kind,
                    &record.subject,
                    &data,
                    &record.prev_hash,
                    &record.hash,
                ],
            );
        }
        rows
    };
    let by_rows = |rows: &AuditRows| {
        let mut verifier = ChainVerifier::default();
        verifier.push_rows(rows);
        verifier.finish(false)
    };
    let by_records = |records: &[AuditRecord]| {
        let mut verifier = ChainVerifier::default();
        records.iter().for_each(|record| verifier.push(record));
        verifier.finish(false)
    };
    let report = by_rows(&rows(&records));
    assert!(report.ok, "{report:?}");
    assert_eq!(report, by_records(&records));
    let canonical_records = varied_canonical_chain();
    let canonical_rows = rows(&canonical_records);
    assert_eq!(
        canonical_rows.get(0).unwrap().data.as_bytes(),
        to_canonical_bytes(&canonical_records[0].data)
    );
    let report = by_rows(&canonical_rows);
    assert!(report.ok, "{report:?}");
    assert_eq!(report, by_records(&canonical_records));

    // Each column edited in turn is found at its record: with data stored canonical
    // (hashed as it lies), and not (record 2 canonicalized on the fast path, record 3,
    // whose data holds a float, on the general one).
    for (records, index) in [
        (&records, 1),
        (&records, 2),
        (&canonical_records, 1),
        (&canonical_records, 2),
    ] {
        for column in 0..7 {
            let mut edited = records.clone();
            let record = &mut edited[index];
            match column {
                0 => record.at.push('1'),
                1 => record.actor = "system".into(),
                2 => record.kind = "call.denied".into(),
                3 => record.subject.push('\n'),
                4 => record.data["n"] = json!(2.5),
                5 => record.prev_hash = GENESIS_HASH.to_owned(),
                _ => record.hash = record.hash.to_uppercase(),
            }
            let report = by_rows(&rows(&edited));
            let seq = index as u64 + 1;
            assert!(!report.ok, "{column}: {report:?}");
            assert_eq!(report.first_bad_seq, Some(seq), "{column}: {report:?}");
            assert_eq!(report, by_records(&edited), "record {seq}, column {column}");
        }
    }

    // Data as the store holds it but spaced and unordered verifies; data that is not JSON
    // is a break, not an error.
    let mut page = AuditRows::with_capacity(1);
    let first = &records[0];
    let spaced = serde_json::to_string_pretty(&first.data).unwrap();
    let columns = |data: &str| -> [String; 7] {
        [
            first.at.as_str(),
            &first.actor,
            &first.kind,
            &first.subject,
            data,
            &first.prev_hash,
            &first.hash,
        ]
        .map(str::to_owned)
    };
    let spaced = columns(&spaced);
    page.push(1, spaced.each_ref().map(String::as_str));
    assert!(by_rows(&page).ok);
    let mut page = AuditRows::with_capacity(1);
    let broken = columns("{not json");
    page.push(1, broken.each_ref().map(String::as_str));
    assert_eq!(by_rows(&page).first_bad_seq, Some(1));
}

/// Lines as the server exports them are checked from their ends, `data` unread: every
/// genuine one is taken that way (so the tests above exercise it), and a line it cannot
/// vouch for falls through to the general path, which locates the break.
#[test]
fn exported_lines_are_checked_from_their_ends_and_a_tampered_one_falls_through() {
    let records = [varied_canonical_chain(), chain(3)];
    let mut scratch = check::Scratch::default();
    let mut taken = 0;
    for records in &records {
        for (line, record) in export(records).lines().zip(records) {
            let checked = scratch.check_exported(line.as_bytes());
            // serde writes an object's keys in UTF-8 order, canonical JSON in UTF-16
            // order: where they differ, `data` as exported is not what was hashed.
            if serde_json::to_vec(&record.data).unwrap() != to_canonical_bytes(&record.data) {
                assert!(checked.is_none(), "{line}");
                continue;
            }
            assert!(
                matches!(checked, Some(check::Checked::Record { seq, hash_ok: true, .. })
                    if seq == record.seq),
                "{line}"
            );
            taken += 1;
        }
    }
    assert!(taken >= 6, "{taken}");
    let record = &chain(1)[0];
    let line = serde_json::to_string(record).unwrap();
    let not_the_servers = [
        line.replace(",\"prev_hash\"", " ,\"prev_hash\""),
        line.replace("\"}", "\" }"),
        line.replace(&record.subject, "call_9"),
        line.replacen("{\"seq\":1,", "{\"seq\":1,\"seq\":1,", 1),
        line.replacen(
            "\"data\"",
            &format!("\"hash\":\"{}\",\"data\"", record.hash),
            1,
        ),
        format!("{line}\r"),
    ];
    for text in &not_the_servers {
        assert!(scratch.check_exported(text.as_bytes()).is_none(), "{text}");
    }

    // A record edited in the second of the blocks a pipeline reads, and one whose hash
    // was recomputed after its edit (it passes alone; the next record's link breaks).
    let mut records = chain(3_000);
    let block = 64 * 1024;
    let second = (block / export(&records[..1]).len()) + 100;
    let mut edited = records.clone();
    edited[second].subject = "call_x".into();
    let text = export(&edited);
    let report = export::verify_in_blocks_for_tests(text.as_bytes(), block, true);
    assert_eq!(
        report.first_bad_seq,
        Some(records[second].seq),
        "{report:?}"
    );
    assert_eq!(report, verify_export_by_values(&text));
    let record = &mut records[second];
    record.subject = "call_x".into();
    record.hash = String::new();
    record.hash = audit_hash(&record.prev_hash, &{
        let mut value = serde_json::to_value(&*record).unwrap();
        value.as_object_mut().unwrap().remove("hash");
        value
    });
    let text = export(&records);
    let report = export::verify_in_blocks_for_tests(text.as_bytes(), block, true);
    assert_eq!(
        report.first_bad_seq,
        Some(records[second].seq + 1),
        "{report:?}"
    );
    assert_eq!(report, verify_export_by_values(&text));
}

/// The direct walk ([`verify_direct`]) reads a SQLite store's chain itself, on every
/// thread, segments then rows: it reads the whole chain, its verdict is the one paging
/// gives, and it stops where a segment cannot be read, at a gap in the segments or in the
/// rows, for the pages to go on from.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_direct_walk_reads_segments_and_rows_and_stops_where_they_stop() {
    use airlock_store::{AuditEntry, Effects, Store};
    use sqlx::Connection as _;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("airlock.db");
    let store = airlock_store::sqlite::SqliteStore::open(&path)
        .await
        .unwrap();
    let at = jiff::Timestamp::from_second(1_800_000_000).unwrap();
    store
        .create_workspace(&airlock_store::Workspace {
            id: "ws".into(),
            name: "ws".into(),
            created_at: at,
        })
        .await
        .unwrap();
    let agent = airlock_protocol::Agent {
        id: "agt".into(),
        name: "scout".into(),
        mode: airlock_protocol::Mode::Ask,
        system_prompt: None,
        tools: None,
        workspace_dir: None,
        llm: None,
        mcp_servers: None,
        created_at: at,
    };
    store
        .create_agent("ws", &agent, "hash", &Effects::none())
        .await
        .unwrap();
    let mut effects = Effects::none();
    for n in 0..5_300 {
        effects = effects.audit(AuditEntry {
            at,
            actor: "agent:scout".into(),
            kind: "call.allowed".into(),
            subject: format!("call_{n}"),
            data: json!({"n": n, "path": format!("/srv/{n:05}")}).into(),
        });
    }
    store.update_agent("ws", &agent, &effects).await.unwrap();
    for _ in 0..5 {
        assert_eq!(store.seal_audit("ws").await.unwrap(), 1_000);
    }
    let store: std::sync::Arc<dyn Store> = std::sync::Arc::new(store);
    // Every record of the chain, through the pages alone, for the verdicts to match.
    let paged = |sealed: ChainVerifier, after: u64| {
        let store = std::sync::Arc::clone(&store);
        async move {
            let mut verifier = sealed;
            let mut after = after;
            loop {
                let page = store.audit_rows_after("ws", after, 1_000).await.unwrap();
                let Some(last) = page.last_seq() else {
                    return verifier.finish(false);
                };
                verifier.push_rows(&page);
                after = last;
            }
        }
    };
    let walk = || {
        let store = std::sync::Arc::clone(&store);
        async move {
            tokio::task::spawn_blocking(move || verify_direct(store.as_ref(), "ws"))
                .await
                .unwrap()
        }
    };
    let (direct, after) = walk().await;
    assert_eq!((direct.records, after), (5_300, 5_300));
    let whole = paged(direct, after).await;
    assert!(whole.ok && whole.records == 5_300, "{whole:?}");
    assert_eq!(whole, paged(ChainVerifier::default(), 0).await);

    let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    // A row deleted: the walk stops before the run of rows holding the gap, and the
    // pages report it.
    sqlx::query("DELETE FROM audit WHERE seq = 5100")
        .execute(&mut conn)
        .await
        .unwrap();
    let (direct, after) = walk().await;
    assert_eq!((direct.records, after), (5_000, 5_000));
    let gap = paged(direct, after).await;
    assert_eq!(gap.first_bad_seq, Some(5_100), "{gap:?}");
    assert_eq!(gap, paged(ChainVerifier::default(), 0).await);
    // A value rewritten in place: read, and the record's hash fails.
    sqlx::query(
        "UPDATE audit_segments SET body = CAST(replace(CAST(body AS TEXT), '/srv/02500', '/srv/92500') AS BLOB)
         WHERE first_seq = 2001",
    )
    .execute(&mut conn)
    .await
    .unwrap();
    let (edited, after) = walk().await;
    assert_eq!(after, 5_000);
    let edited = paged(edited, after).await;
    assert_eq!(edited.first_bad_seq, Some(2_501), "{edited:?}");
    // A segment cut short: the walk stops before it.
    sqlx::query("UPDATE audit_segments SET body = substr(body, 1, 999) WHERE first_seq = 3001")
        .execute(&mut conn)
        .await
        .unwrap();
    let (cut, after) = walk().await;
    assert_eq!((cut.records, after), (3_000, 3_000));
    // A segment gone: the walk stops at the gap.
    sqlx::query("DELETE FROM audit_segments WHERE first_seq = 1001")
        .execute(&mut conn)
        .await
        .unwrap();
    let (gap, after) = walk().await;
    assert_eq!((gap.records, after), (1_000, 1_000));
}

/// A checking thread that dies leaves the items it claimed marked as failed, never as
/// checked, and every other item keeps its own result, in order.
#[test]
#[allow(clippy::panic)]
fn a_checking_thread_that_dies_fails_only_what_it_claimed() {
    let items: Vec<u32> = (0..40).collect();
    let first = std::thread::current().id();
    let mut states = vec![(); 2];
    let mut out = Vec::new();
    claim_all(
        &items,
        &mut states,
        4,
        |(), item| {
            if std::thread::current().id() != first {
                panic!("the other thread dies on its first item");
            }
            // Slow enough that the other thread surely claims a chunk.
            std::thread::sleep(std::time::Duration::from_millis(2));
            Some(item * 10)
        },
        || None,
        &mut out,
    );
    assert_eq!(out.len(), items.len());
    let failed: Vec<usize> = (0..items.len()).filter(|&at| out[at].is_none()).collect();
    // Exactly one chunk of four, whole, and nothing else.
    assert_eq!(failed.len(), 4, "{out:?}");
    assert_eq!(failed[0] % 4, 0);
    assert_eq!(failed[3], failed[0] + 3);
    for (item, result) in items.iter().zip(&out) {
        assert!(result.is_none() || *result == Some(item * 10), "{out:?}");
    }
}
