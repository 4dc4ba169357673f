//! After a simulated power loss: the disk that is left, rebuilt from what the
//! fault shim's power mirror (crates/faults/src/power.rs) recorded of a broker that was then SIGKILLed.
//!
//! The mirror holds the durable content of every file the broker wrote
//! (`data/<inode>.<generation>`, brought up to date by each successful
//! fdatasync / fsync / syncfs) and `ops`, the namespace changes in the order
//! they returned: `link`, `unlink`, `mkdir`, `rmdir`, `rename`, and the sync
//! points `syncdir` and `syncfs`. The model (D34, docs/check.md):
//!
//! - a namespace change is durable once its directory was synced after it
//!   (both directories, for the two halves of a rename), or the whole
//!   filesystem was; a directory is one identity across renames (a sync of its
//!   new name reaches what was made in it under the old, and a renamed
//!   directory takes what it holds with it); every other one is kept only if it falls before a cut
//!   drawn at random: what a journal that commits metadata in order leaves;
//! - a file holds what its last sync left; with `tear`, each run of bytes
//!   written since (in 512-byte sectors) may also have reached the disk, by
//!   one of four patterns drawn per file (none, all, a prefix, each sector
//!   at random), and a file that grew may keep any part of the growth
//!   (zeros where its data never got there).
//!
//! Owns the replay and the rebuilt directory. Must never read the dead
//! directory for anything but the bytes a file had at the kill (tearing),
//! nor keep an unsynced change outside those rules.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt as _;
use std::path::Path;

/// The sector a tear is reasoned in.
pub const SECTOR: usize = 512;

/// One line of `ops`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    Link { key: String, path: String },
    Unlink { path: String },
    Mkdir { path: String },
    Rmdir { path: String },
    Rename { key: String, from: String, to: String },
    SyncDir { path: String },
    SyncFs,
}

/// What a restore kept and dropped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    pub ops: u64,
    /// Namespace changes durable by a sync.
    pub durable: u64,
    /// Not durable, kept by the cut.
    pub kept: u64,
    /// Not durable, dropped.
    pub dropped: u64,
    pub files: u64,
    /// Bytes written but never synced, in files that survived: dropped / kept by tearing.
    pub unsynced_dropped: u64,
    pub unsynced_kept: u64,
}

/// `%`, tab and newline escaped: a path is one field of a line.
pub fn escape(s: &str) -> String {
    s.replace('%', "%25").replace('\t', "%09").replace('\n', "%0A")
}

fn unescape(s: &str) -> String {
    s.replace("%0A", "\n").replace("%09", "\t").replace("%25", "%")
}

/// One `ops` line; `None` for a line cut short by the kill (the last one) or not understood.
pub fn parse_line(line: &str) -> Option<Op> {
    let f: Vec<&str> = line.split('\t').collect();
    let p = |i: usize| f.get(i).map(|s| unescape(s));
    Some(match (f.first()?, f.len()) {
        (&"link", 3) => Op::Link { key: p(1)?, path: p(2)? },
        (&"unlink", 2) => Op::Unlink { path: p(1)? },
        (&"mkdir", 2) => Op::Mkdir { path: p(1)? },
        (&"rmdir", 2) => Op::Rmdir { path: p(1)? },
        (&"rename", 4) => Op::Rename { key: p(1)?, from: p(2)?, to: p(3)? },
        (&"syncdir", 2) => Op::SyncDir { path: p(1)? },
        (&"syncfs", 1) => Op::SyncFs,
        _ => return None,
    })
}

/// The directory a path's entry lives in ("" for the root).
fn parent(p: &str) -> &str {
    p.rfind('/').map_or("", |i| &p[..i])
}

/// A namespace change: one op, or one half of a rename.
#[derive(Debug, Clone)]
enum Unit {
    Link(String, Node),
    /// The new name of a renamed directory: what it holds goes with it (D81 renames whole
    /// partition directories into place).
    MoveDir {
        from: String,
        to: String,
    },
    Remove(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    Dir,
    File(String),
}

/// Each op's units and the directory (by path at the op's time) that must be synced for
/// each to be durable.
fn units(op: &Op) -> Vec<(Unit, String)> {
    let node = |key: &str| if key == "dir" { Node::Dir } else { Node::File(key.to_string()) };
    match op {
        Op::Link { key, path } => vec![(Unit::Link(path.clone(), node(key)), parent(path).into())],
        Op::Mkdir { path } => vec![(Unit::Link(path.clone(), Node::Dir), parent(path).into())],
        Op::Unlink { path } | Op::Rmdir { path } => vec![(Unit::Remove(path.clone()), parent(path).into())],
        Op::Rename { key, from, to } => {
            let new = if key == "dir" {
                Unit::MoveDir { from: from.clone(), to: to.clone() }
            } else {
                Unit::Link(to.clone(), node(key))
            };
            vec![(new, parent(to).into()), (Unit::Remove(from.clone()), parent(from).into())]
        }
        Op::SyncDir { .. } | Op::SyncFs => Vec::new(),
    }
}

/// Directories by identity, as the broker saw them: a sync reaches the directory a path
/// names when the sync is made, so after a directory is renamed, a sync of its new name
/// makes durable what was made in it under its old one (as fsync of the inode does).
struct Dirs {
    ids: HashMap<String, u64>,
    next: u64,
}

impl Dirs {
    fn new() -> Dirs {
        Dirs { ids: HashMap::from([(String::new(), 0)]), next: 1 }
    }

    /// The directory `path` names now; one never seen (made before the mirror started) gets
    /// an identity of its own.
    fn id(&mut self, path: &str) -> u64 {
        if let Some(&id) = self.ids.get(path) {
            return id;
        }
        let id = self.next;
        self.next += 1;
        self.ids.insert(path.to_string(), id);
        id
    }

    /// Follows the broker's namespace past `op`.
    fn apply(&mut self, op: &Op) {
        match op {
            Op::Mkdir { path } => {
                self.ids.remove(path);
                self.id(path);
            }
            Op::Rmdir { path } => {
                self.ids.remove(path);
            }
            Op::Rename { key, from, to } if key == "dir" => {
                let prefix = format!("{from}/");
                let moved: Vec<(String, u64)> = self
                    .ids
                    .iter()
                    .filter(|(p, _)| *p == from || p.starts_with(&prefix))
                    .map(|(p, &id)| (p.clone(), id))
                    .collect();
                for (p, id) in moved {
                    self.ids.remove(&p);
                    self.ids.insert(format!("{to}{}", &p[from.len()..]), id);
                }
            }
            _ => {}
        }
    }
}

/// A small seeded generator (splitmix64): the same seed rebuilds the same disk.
pub struct Rng(u64);
impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }
}

/// The namespace after the power loss: durable units, and the others before `cut`.
fn replay(ops: &[Op], cut: usize, report: &mut Report) -> BTreeMap<String, Node> {
    // Forwards: which directory each unit lives in and each sync reaches, by identity.
    let mut dirs = Dirs::new();
    let mut unit_dirs: Vec<Vec<u64>> = Vec::with_capacity(ops.len());
    let mut sync_dirs: Vec<Option<u64>> = Vec::with_capacity(ops.len());
    for op in ops {
        unit_dirs.push(units(op).into_iter().map(|(_, dir)| dirs.id(&dir)).collect());
        sync_dirs.push(match op {
            Op::SyncDir { path } => Some(dirs.id(path)),
            _ => None,
        });
        dirs.apply(op);
    }
    // Backwards: is a sync of the unit's directory (or of everything) still to come?
    let mut durable = vec![Vec::new(); ops.len()];
    let mut synced: HashSet<u64> = HashSet::new();
    let mut all = false;
    for (i, op) in ops.iter().enumerate().rev() {
        match op {
            Op::SyncDir { .. } => {
                synced.extend(sync_dirs[i]);
            }
            Op::SyncFs => all = true,
            _ => durable[i] = unit_dirs[i].iter().map(|dir| all || synced.contains(dir)).collect(),
        }
    }
    let mut ns: BTreeMap<String, Node> = BTreeMap::new();
    for (i, op) in ops.iter().enumerate() {
        for ((unit, _), d) in units(op).into_iter().zip(&durable[i]) {
            if *d {
                report.durable += 1;
            } else if i < cut {
                report.kept += 1;
            } else {
                report.dropped += 1;
                continue;
            }
            apply(&mut ns, unit);
        }
    }
    ns
}

fn under<'a>(ns: &'a BTreeMap<String, Node>, dir: &'a str) -> impl Iterator<Item = (&'a String, &'a Node)> + 'a {
    let prefix = format!("{dir}/");
    ns.range(prefix.clone()..).take_while(move |(k, _)| k.starts_with(&prefix))
}

fn apply(ns: &mut BTreeMap<String, Node>, unit: Unit) {
    match unit {
        Unit::Link(path, node) => {
            ns.insert(path, node);
        }
        // What the directory holds on this disk goes with it; the old name's half removes it there.
        Unit::MoveDir { from, to } => {
            let moved: Vec<(String, Node)> =
                under(ns, &from).map(|(k, n)| (format!("{to}{}", &k[from.len()..]), n.clone())).collect();
            ns.insert(to, Node::Dir);
            ns.extend(moved);
        }
        Unit::Remove(path) => {
            if ns.remove(&path) == Some(Node::Dir) {
                let gone: Vec<String> = under(ns, &path).map(|(k, _)| k.clone()).collect();
                for k in gone {
                    ns.remove(&k);
                }
            }
        }
    }
}

/// Every regular file under `root` by inode: the bytes each had when the broker was killed.
fn files_by_inode(root: &Path, out: &mut HashMap<u64, std::path::PathBuf>) -> io::Result<()> {
    let rd = match fs::read_dir(root) {
        Ok(rd) => rd,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    for e in rd {
        let e = e?;
        let md = fs::symlink_metadata(e.path())?;
        if md.is_dir() {
            files_by_inode(&e.path(), out)?;
        } else if md.is_file() {
            out.insert(md.ino(), e.path());
        }
    }
    Ok(())
}

/// `durable` with some of what `now` wrote since, as the module's doc says.
pub fn tear(durable: &[u8], now: &[u8], rng: &mut Rng, report: &mut Report) -> Vec<u8> {
    let mut len = durable.len();
    if now.len() > durable.len() {
        let grow = rng.below((now.len() - durable.len()) as u64 + 1) as usize;
        len = (durable.len() + grow).div_ceil(SECTOR).saturating_mul(SECTOR).min(now.len());
    }
    let mut out = durable.to_vec();
    out.resize(len, 0);
    // Sectors past the file's length now: a shrink not yet synced, kept as synced.
    let changed: Vec<usize> = (0..len.div_ceil(SECTOR))
        .filter(|s| s * SECTOR < now.len())
        .filter(|s| {
            let r = s * SECTOR..((s + 1) * SECTOR).min(len);
            let d = out.get(r.clone()).unwrap_or(&[]);
            let n = now.get(r.start..r.end.min(now.len())).unwrap_or(&[]);
            d != n
        })
        .collect();
    let pattern = rng.below(4);
    let prefix = rng.below(changed.len() as u64 + 1) as usize;
    for (i, &s) in changed.iter().enumerate() {
        let r = s * SECTOR..((s + 1) * SECTOR).min(len);
        let take = match pattern {
            0 => false,
            1 => true,
            2 => i < prefix,
            _ => rng.below(2) == 0,
        };
        if take {
            let n = &now[r.start..r.end.min(now.len())];
            out[r.start..r.start + n.len()].copy_from_slice(n);
            out[r.start + n.len()..r.end].fill(0);
            report.unsynced_kept += r.len() as u64;
        } else {
            report.unsynced_dropped += r.len() as u64;
        }
    }
    out
}

/// Rebuild into `out` (which must not exist) the disk a power loss leaves: from the mirror
/// at `mirror`, with `dead` the broker's directory as it was at the kill (read for tearing
/// only). Deterministic for a given seed.
pub fn restore(mirror: &Path, dead: &Path, out: &Path, seed: u64, with_tear: bool) -> io::Result<Report> {
    let text = fs::read_to_string(mirror.join("ops"))?;
    let ops: Vec<Op> = text.lines().filter_map(parse_line).collect();
    let mut rng = Rng::new(seed);
    let mut report = Report { ops: ops.len() as u64, ..Report::default() };
    let cut = rng.below(ops.len() as u64 + 1) as usize;
    let ns = replay(&ops, cut, &mut report);
    // A key is `<inode>.<generation>`; the newest generation of an inode is the file that
    // holds it now.
    let mut newest: HashMap<u64, u64> = HashMap::new();
    for op in &ops {
        if let Op::Link { key, .. } | Op::Rename { key, .. } = op {
            if let Some((ino, gen)) = key.split_once('.').and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?))) {
                let g = newest.entry(ino).or_insert(gen);
                *g = (*g).max(gen);
            }
        }
    }
    let mut now_files = HashMap::new();
    if with_tear {
        files_by_inode(dead, &mut now_files)?;
    }
    fs::create_dir(out)?;
    for (path, node) in &ns {
        let p = parent(path);
        if !p.is_empty() && ns.get(p) != Some(&Node::Dir) {
            continue; // its directory did not survive
        }
        let target = out.join(path);
        match node {
            Node::Dir => fs::create_dir(&target)?,
            Node::File(key) => {
                let durable = match fs::read(mirror.join("data").join(key)) {
                    Ok(b) => b,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
                    Err(e) => return Err(e),
                };
                let now = key
                    .split_once('.')
                    .and_then(|(ino, gen)| {
                        let ino: u64 = ino.parse().ok()?;
                        (newest.get(&ino) == gen.parse().ok().as_ref()).then_some(ino)
                    })
                    .and_then(|ino| now_files.get(&ino))
                    .map(fs::read)
                    .transpose()?;
                let bytes = match now {
                    Some(now) => tear(&durable, &now, &mut rng, &mut report),
                    None => durable,
                };
                fs::write(&target, bytes)?;
                report.files += 1;
            }
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ops(lines: &str) -> Vec<Op> {
        lines.lines().map(|l| parse_line(&l.replace(" | ", "\t")).expect(l)).collect()
    }

    fn names(ns: &BTreeMap<String, Node>) -> Vec<String> {
        ns.keys().cloned().collect()
    }

    #[test]
    fn a_change_survives_only_by_a_later_sync_of_its_directory_or_the_cut() {
        let o = ops("mkdir | d\nlink | 1.1 | d/a\nsyncdir | d\nlink | 2.1 | d/b\nsyncdir | \nlink | 3.1 | c");
        let mut r = Report::default();
        // Cut 0: only what a sync made durable. d/b was never synced in d; mkdir d was
        // synced by the root's sync; c came after every sync.
        assert_eq!(names(&replay(&o, 0, &mut r)), vec!["d", "d/a"]);
        assert_eq!((r.durable, r.dropped), (2, 2));
        // A cut past everything keeps it all, in order.
        assert_eq!(names(&replay(&o, o.len(), &mut Report::default())), vec!["c", "d", "d/a", "d/b"]);
        // syncfs makes everything before it durable.
        let o = ops("link | 1.1 | x\nrename | 1.1 | x | y\nsyncfs\nunlink | y");
        assert_eq!(names(&replay(&o, 0, &mut Report::default())), vec!["y"]);
    }

    #[test]
    fn a_rename_is_two_changes_each_durable_by_its_own_directory() {
        let o = ops("mkdir | a\nmkdir | b\nlink | 7.1 | a/f\nsyncfs\nrename | 7.1 | a/f | b/f\nsyncdir | b");
        // Only the target's directory synced: the file is under both names (a legal state).
        assert_eq!(names(&replay(&o, 0, &mut Report::default())), vec!["a", "a/f", "b", "b/f"]);
    }

    /// D81 renames whole partition directories into place: what a directory holds moves
    /// with it, and a sync of its new name makes durable what was made in it under the old.
    /// Found by CI's power campaign: this model dropped the renamed directory's files.
    #[test]
    fn a_renamed_directory_keeps_what_it_holds_and_its_new_name_syncs_it() {
        let o = ops("mkdir | a\nlink | 7.1 | a/f\nsyncfs\nrename | dir | a | z\nsyncdir | ");
        assert_eq!(names(&replay(&o, 0, &mut Report::default())), vec!["z", "z/f"]);
        // Files made in the spare, never synced there; the new name and its parent synced.
        let o = ops("mkdir | p\nmkdir | s\nsyncfs\nmkdir | s/1\nlink | 7.1 | s/1/f\nrename | dir | s/1 | p/1\nsyncdir | p/1\nsyncdir | p");
        // (`s/1/f` is left without its directory, whose making was never synced in `s`: the
        // restore skips it.)
        assert_eq!(names(&replay(&o, 0, &mut Report::default())), vec!["p", "p/1", "p/1/f", "s", "s/1/f"]);
        // Nothing synced after the rename: at cut 0 the rename and what it moved are gone.
        let o = ops("mkdir | p\nmkdir | s\nsyncfs\nmkdir | s/1\nlink | 7.1 | s/1/f\nrename | dir | s/1 | p/1");
        assert_eq!(names(&replay(&o, 0, &mut Report::default())), vec!["p", "s"]);
        // A sync of the old name after the rename reaches no directory of that name.
        let o = ops("mkdir | p\nmkdir | s\nsyncfs\nmkdir | s/1\nrename | dir | s/1 | p/1\nmkdir | s/1\nlink | 7.1 | s/1/f\nsyncdir | s/1\nsyncdir | s");
        assert_eq!(names(&replay(&o, 0, &mut Report::default())), vec!["p", "s", "s/1", "s/1/f"]);
    }

    #[test]
    fn a_tear_keeps_the_synced_bytes_and_some_of_the_rest() {
        let durable = vec![1u8; 3 * SECTOR];
        let mut now = durable.clone();
        now[SECTOR..2 * SECTOR].fill(2);
        now.extend(vec![3u8; 2 * SECTOR]);
        let mut kept_any = false;
        let mut dropped_any = false;
        for seed in 0..64 {
            let mut r = Report::default();
            let t = tear(&durable, &now, &mut Rng::new(seed), &mut r);
            assert!(t.len() >= durable.len() && t.len() <= now.len() && t.len().is_multiple_of(SECTOR));
            // The synced sectors that did not change are always there.
            assert!(t[..SECTOR].iter().all(|&b| b == 1) && t[2 * SECTOR..3 * SECTOR].iter().all(|&b| b == 1));
            // Every other sector is either its synced or its newer content, never a mix.
            for s in t[3 * SECTOR..].chunks(SECTOR) {
                assert!(s.iter().all(|&b| b == 0) || s.iter().all(|&b| b == 3));
            }
            let mid = &t[SECTOR..2 * SECTOR];
            assert!(mid.iter().all(|&b| b == 1) || mid.iter().all(|&b| b == 2));
            kept_any |= r.unsynced_kept > 0;
            dropped_any |= r.unsynced_dropped > 0;
        }
        assert!(kept_any && dropped_any);
    }

    /// Found by the first long campaign: a file cut shorter since its last sync panicked
    /// the restore (a sector past the new end was taken as changed).
    #[test]
    fn a_shrink_not_yet_synced_tears_without_panicking() {
        let durable = vec![7u8; 4 * SECTOR + 100];
        let mut now = vec![7u8; SECTOR + 17];
        now[..10].fill(9);
        for seed in 0..64 {
            let mut r = Report::default();
            let t = tear(&durable, &now, &mut Rng::new(seed), &mut r);
            assert_eq!(t.len(), durable.len());
            assert!(t[SECTOR + 17..].iter().all(|&b| b == 7) || t[2 * SECTOR..].iter().all(|&b| b == 7));
            assert!(t[10..SECTOR].iter().all(|&b| b == 7));
        }
    }

    #[test]
    fn a_line_cut_short_by_the_kill_is_ignored_and_paths_round_trip() {
        assert_eq!(parse_line("link\t1.1"), None);
        assert_eq!(parse_line("bogus"), None);
        let weird = "a\tb\nc%d";
        let line = format!("link\t1.1\t{}", escape(weird));
        assert_eq!(parse_line(&line), Some(Op::Link { key: "1.1".into(), path: weird.into() }));
    }
}
