//! A resume over a changed input: refused by name, or carried over exactly once.

use std::collections::HashMap;

use proptest::prelude::*;

use crate::input::{resume_over, FileEntry, InputFingerprint, Resume};
use crate::order::{expand, OrderSpec};
use crate::{Config, Machine, SplitInfo, State, Work};

/// Files of `rows[i]` split rows each, named `f{i}`.
fn files(rows: &[Vec<u64>], names: &[String]) -> Vec<FileEntry> {
    rows.iter()
        .zip(names)
        .map(|(r, n)| FileEntry {
            path: format!("/data/{n}"),
            size: 100 * r.iter().sum::<u64>() + 1,
            modified_ms: Some(7),
            split_rows: r.clone(),
            split_units: Vec::new(),
        })
        .collect()
}

fn splits(fp: &InputFingerprint) -> (Vec<SplitInfo>, Vec<(String, u64)>, Vec<u64>) {
    let InputFingerprint::Files { files, .. } = fp;
    let (mut s, mut base, mut rows) = (Vec::new(), Vec::new(), Vec::new());
    for f in files {
        let mut at = 0;
        for &n in &f.split_rows {
            s.push(SplitInfo::new(s.len() as u32, n));
            base.push((f.path.clone(), at));
            rows.push(n);
            at += n;
        }
    }
    (s, base, rows)
}

/// Drives every rank over leases of either kind (fixed-order segments or ledger ranges),
/// acking in small steps, until each took `stop` rows of the first epoch (or the feed ends).
/// Rows are named (file, row in file).
fn drive(
    m: &mut Machine,
    base: &[(String, u64)],
    split_rows: &[u64],
    stop: Option<u64>,
) -> Vec<Vec<Vec<(String, u64)>>> {
    let w = m.config().workers as usize;
    let incs: Vec<u64> = (0..w as u32).map(|r| m.join(r, "h", 0).unwrap()).collect();
    let start = m.epoch();
    let mut out: Vec<Vec<Vec<(String, u64)>>> = Vec::new();
    let mut taken = vec![0u64; w];
    loop {
        let mut progress = false;
        for r in 0..w {
            if stop.is_some_and(|s| m.epoch() == start && taken[r] >= s) {
                continue;
            }
            let Work::Lease(l) = m.request_work(r as u32, incs[r], None, 0).unwrap() else {
                continue;
            };
            let rows: Vec<(u32, u64)> = match &l.order {
                Some(o) => expand(
                    split_rows,
                    &[],
                    o.seed,
                    o.shuffle,
                    o.spec,
                    o.batch_size,
                    &o.segment,
                ),
                None => (l.first_row..l.first_row + l.rows)
                    .map(|i| (l.split, i))
                    .collect(),
            };
            let mut n = rows.len() as u64;
            if let Some(s) = stop.filter(|_| l.epoch == start) {
                n = n.min(s - taken[r]);
            }
            let e = l.epoch as usize;
            if out.len() <= e {
                out.resize(e + 1, vec![Vec::new(); w]);
            }
            if !l.pad {
                for &(s, i) in &rows[..n as usize] {
                    let (f, at) = &base[s as usize];
                    out[e][r].push((f.clone(), at + i));
                }
            }
            taken[r] += n;
            m.ack(r as u32, incs[r], l.lease, l.split, n, 0).unwrap();
            progress = true;
        }
        if !progress {
            return out;
        }
    }
}

#[test]
fn versions_one_to_three_are_read_and_others_refused_by_name() {
    let mut m = Machine::new(vec![SplitInfo::new(0, 10)], Config::new(1, 2)).unwrap();
    m.set_input(InputFingerprint::of_files(
        "/data",
        files(&[vec![10]], &["a".into()]),
    ));
    let st = m.state();
    assert_eq!(st.version, 2);
    let json = st.to_json();
    assert!(json.contains("\"input\":{\"kind\":\"files\""), "{json}");
    let mut v1 = State::from_json(&json).unwrap();
    v1.version = 1;
    v1.input = None;
    Machine::resume(vec![SplitInfo::new(0, 10)], Config::new(1, 2), &v1).unwrap();
    let Resume::AsSaved { note: Some(n) } =
        resume_over(&v1, st.input.as_ref().unwrap(), false).unwrap()
    else {
        panic!("a version-1 state resumes unchecked, with a note")
    };
    assert!(n.contains("cannot be checked"), "{n}");
    let mut v3 = st.clone();
    v3.version = 3;
    Machine::resume(vec![SplitInfo::new(0, 10)], Config::new(1, 2), &v3).unwrap();
    let mut v4 = st.clone();
    v4.version = 4;
    let e = Machine::resume(vec![SplitInfo::new(0, 10)], Config::new(1, 2), &v4).unwrap_err();
    assert!(e.to_string().contains("state version 4"), "{e}");
}

#[test]
fn a_changed_input_is_refused_naming_the_first_file_that_differs() {
    let names: Vec<String> = ["p0", "p1", "p2"].map(String::from).into();
    let was = InputFingerprint::of_files("/data/", files(&[vec![5], vec![6], vec![7]], &names));
    let mut m = Machine::new(splits(&was).0, Config::new(1, 2)).unwrap();
    m.set_input(was.clone());
    let st = m.state();
    assert!(matches!(
        resume_over(&st, &was, false).unwrap(),
        Resume::AsSaved { note: None }
    ));
    let renamed: Vec<String> = ["p0", "p9", "p2"].map(String::from).into();
    let now = InputFingerprint::of_files("/data", files(&[vec![5], vec![6], vec![7]], &renamed));
    let e = resume_over(&st, &now, false).unwrap_err().to_string();
    assert!(
        e.contains("p1: missing") && e.contains("1 more") && e.contains("--allow-changed-input"),
        "{e}"
    );
    let mut grown = files(&[vec![5], vec![6], vec![7]], &names);
    grown[2].size += 1;
    let e = resume_over(&st, &InputFingerprint::of_files("/data", grown), false).unwrap_err();
    assert!(e.to_string().contains("p2: size changed"), "{e}");
    let mut touched = files(&[vec![5], vec![6], vec![7]], &names);
    touched[0].modified_ms = Some(8);
    let e = resume_over(&st, &InputFingerprint::of_files("/data", touched), false).unwrap_err();
    assert!(e.to_string().contains("p0: modified"), "{e}");
}

/// The same file, the same rows, cut into other units (its row groups then, the whole file
/// now: a plan made from a table's metadata by a newer build): the fixed order's lanes follow
/// the units, so the saved positions would name other rows. Refused by name; allowed, every
/// acked row is kept (the split's rows are the same).
#[test]
fn the_same_rows_in_other_units_are_a_change() {
    let names: Vec<String> = ["p0", "p1"].map(String::from).into();
    let mut by_units = files(&[vec![10], vec![6]], &names);
    by_units[0].split_units = vec![vec![3, 3, 3, 1]];
    let was = InputFingerprint::of_files("/data", by_units);
    let mut m = Machine::new(splits(&was).0, Config::new(1, 2)).unwrap();
    m.set_input(was);
    let st = m.state();
    let now = InputFingerprint::of_files("/data", files(&[vec![10], vec![6]], &names));
    let e = resume_over(&st, &now, false).unwrap_err().to_string();
    assert!(
        e.contains("p0: planned into other units") && e.contains("--allow-changed-input"),
        "{e}"
    );
    assert!(matches!(
        resume_over(&st, &now, true).unwrap(),
        Resume::Replanned { .. }
    ));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Stop a run mid-epoch, change the input (a file removed, rewritten or added), resume
    /// with a changed input allowed: the rows of epoch 0 taken before from unchanged files and
    /// after are each row of the new input at most once, all but the dropped rest, on equal
    /// steps; the next epoch is a whole epoch of the new input.
    #[test]
    fn a_resume_over_a_changed_input_delivers_every_unchanged_row_once(
        rows in prop::collection::vec(prop::collection::vec(1u64..60, 1..4), 2..6),
        w in 1u32..4, b in 1u64..5, buffer in 0u64..40, cycle in 1u32..4, fixed: bool,
        seed: u64, cut in 0.0f64..1.0, how in 0usize..3, which: prop::sample::Index,
    ) {
        let names: Vec<String> = (0..rows.len()).map(|i| format!("f{i:02}")).collect();
        let was = InputFingerprint::of_files("/data", files(&rows, &names));
        let (sp, base, split_rows) = splits(&was);
        let total: u64 = split_rows.iter().sum();
        prop_assume!(total >= 2 * u64::from(w) * b);
        let cfg = Config {
            epochs: 2,
            seed,
            order: fixed.then_some(OrderSpec::new(buffer, cycle)),
            ..Config::new(w, b)
        };
        let mut m = Machine::new(sp, cfg).unwrap();
        m.set_input(was.clone());
        let stop = ((m.quota() / b) as f64 * cut) as u64 * b;
        let before = drive(&mut m, &base, &split_rows, Some(stop));
        let st = State::from_json(&m.state().to_json()).unwrap();
        prop_assume!(!st.finished && st.epoch == 0);

        let i = which.index(rows.len());
        let (mut rows2, mut names2) = (rows.clone(), names.clone());
        match how {
            0 => { rows2.remove(i); names2.remove(i); }
            1 => { rows2[i] = vec![rows[i].iter().sum::<u64>() + 3]; }
            _ => { rows2.insert(i, vec![11, 4]); names2.insert(i, format!("f{i:02}a")); }
        }
        let mut entries = files(&rows2, &names2);
        if how == 1 {
            entries[i].size += 1;
        }
        let now = InputFingerprint::of_files("/data", entries);
        let changed = if how == 0 || how == 1 { names[i].clone() } else { format!("f{i:02}a") };
        let (sp2, base2, split_rows2) = splits(&now);
        let total2: u64 = split_rows2.iter().sum();
        prop_assume!(total2 >= u64::from(w) * b);
        let Resume::Replanned { state, note } = resume_over(&st, &now, true).unwrap() else {
            panic!("a changed input is re-planned");
        };
        prop_assert!(note.contains(&changed), "{}", note);
        let json = state.to_json();
        let state = State::from_json(&json).unwrap();
        let mut m2 = Machine::resume(sp2, Config::new(w, 1), &state).unwrap();
        let after = drive(&mut m2, &base2, &split_rows2, None);
        prop_assert!(m2.finished());
        let current: HashMap<(String, u64), ()> = base2.iter().zip(&split_rows2)
            .flat_map(|((f, at), &n)| (*at..at + n).map(move |r| ((f.clone(), r), ())))
            .collect();
        let kept = |r: &(String, u64)| !r.0.ends_with(&changed) && current.contains_key(r);
        let mut e0: Vec<(String, u64)> = before.first().into_iter().flatten().flatten()
            .filter(|r| kept(r)).cloned()
            .chain(after[0].iter().flatten().cloned()).collect();
        e0.sort();
        let n = e0.len();
        e0.dedup();
        prop_assert_eq!(e0.len(), n, "a row came twice in epoch 0");
        prop_assert!(e0.iter().all(|r| current.contains_key(r)));
        prop_assert!((current.len() - n) < (w as usize) * b as usize, "{} of {}", n, current.len());
        let per: Vec<usize> = after[0].iter().map(Vec::len).collect();
        let mut e1: Vec<(String, u64)> = after[1].iter().flatten().cloned().collect();
        e1.sort();
        let n1 = e1.len();
        e1.dedup();
        prop_assert_eq!(e1.len(), n1, "a row came twice in epoch 1");
        prop_assert!(current.len() - n1 < (w as usize) * b as usize);
        let _ = (per, total2);
    }
}
