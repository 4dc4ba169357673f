//! The calls that change a directory or open, close or resize a file,
//! interposed only to tell the power mirror ([`crate::power`]) what they did.
//! Each forwards to libc's and returns exactly what it returned; the mirror
//! is told after a call that succeeded (and asked what it needs before one
//! that creates or renames). Must never change an argument or a result.

use crate::fail;
use crate::power::{self, Change};
use libc::{c_char, c_int, c_uint, mode_t, off64_t, off_t};

macro_rules! open_symbol {
    ($name:ident, $lit:literal) => {
        /// Interposed: see the module's doc. `mode` is read only with `O_CREAT` / `O_TMPFILE`,
        /// as libc's variadic argument is (x86-64 passes it in a register either way).
        ///
        /// # Safety
        /// As libc's.
        #[no_mangle]
        pub unsafe extern "C" fn $name(path: *const c_char, flags: c_int, mode: mode_t) -> c_int {
            let o = power::opening(libc::AT_FDCWD, path, flags);
            let Some(f) = real!($lit, unsafe extern "C" fn(*const c_char, c_int, c_uint) -> c_int) else {
                return fail(libc::ENOSYS);
            };
            let fd = f(path, flags, mode as c_uint);
            power::opened(o, fd);
            fd
        }
    };
}

macro_rules! openat_symbol {
    ($name:ident, $lit:literal) => {
        /// Interposed: see the module's doc.
        ///
        /// # Safety
        /// As libc's.
        #[no_mangle]
        pub unsafe extern "C" fn $name(dirfd: c_int, path: *const c_char, flags: c_int, mode: mode_t) -> c_int {
            let o = power::opening(dirfd, path, flags);
            let Some(f) = real!($lit, unsafe extern "C" fn(c_int, *const c_char, c_int, c_uint) -> c_int) else {
                return fail(libc::ENOSYS);
            };
            let fd = f(dirfd, path, flags, mode as c_uint);
            power::opened(o, fd);
            fd
        }
    };
}

open_symbol!(open, "open");
open_symbol!(open64, "open64");
openat_symbol!(openat, "openat");
openat_symbol!(openat64, "openat64");

/// Interposed: see the module's doc.
///
/// # Safety
/// As libc's.
#[no_mangle]
pub unsafe extern "C" fn close(fd: c_int) -> c_int {
    let Some(f) = real!("close", unsafe extern "C" fn(c_int) -> c_int) else { return fail(libc::ENOSYS) };
    let r = f(fd);
    power::closed(fd);
    r
}

/// Interposed: see the module's doc.
///
/// # Safety
/// As libc's.
#[no_mangle]
pub unsafe extern "C" fn ftruncate(fd: c_int, len: off_t) -> c_int {
    power::truncating(fd, len);
    match real!("ftruncate", unsafe extern "C" fn(c_int, off_t) -> c_int) {
        Some(f) => f(fd, len),
        None => fail(libc::ENOSYS),
    }
}

/// Interposed: see the module's doc.
///
/// # Safety
/// As libc's.
#[no_mangle]
pub unsafe extern "C" fn ftruncate64(fd: c_int, len: off64_t) -> c_int {
    power::truncating(fd, len);
    match real!("ftruncate64", unsafe extern "C" fn(c_int, off64_t) -> c_int) {
        Some(f) => f(fd, len),
        None => fail(libc::ENOSYS),
    }
}

/// Interposed: see the module's doc.
///
/// # Safety
/// As libc's.
#[no_mangle]
pub unsafe extern "C" fn rename(old: *const c_char, new: *const c_char) -> c_int {
    let c = power::changing(libc::AT_FDCWD, old, libc::AT_FDCWD, new);
    let Some(f) = real!("rename", unsafe extern "C" fn(*const c_char, *const c_char) -> c_int) else {
        return fail(libc::ENOSYS);
    };
    let r = f(old, new);
    if r == 0 {
        power::changed(c, Change::Rename);
    }
    r
}

/// Interposed: see the module's doc.
///
/// # Safety
/// As libc's.
#[no_mangle]
pub unsafe extern "C" fn renameat(od: c_int, old: *const c_char, nd: c_int, new: *const c_char) -> c_int {
    let c = power::changing(od, old, nd, new);
    let Some(f) = real!("renameat", unsafe extern "C" fn(c_int, *const c_char, c_int, *const c_char) -> c_int) else {
        return fail(libc::ENOSYS);
    };
    let r = f(od, old, nd, new);
    if r == 0 {
        power::changed(c, Change::Rename);
    }
    r
}

/// Interposed: see the module's doc. `RENAME_EXCHANGE` is not modelled (Baton never asks it).
///
/// # Safety
/// As libc's.
#[no_mangle]
pub unsafe extern "C" fn renameat2(
    od: c_int,
    old: *const c_char,
    nd: c_int,
    new: *const c_char,
    flags: c_uint,
) -> c_int {
    let c = power::changing(od, old, nd, new);
    let Some(f) = real!("renameat2", unsafe extern "C" fn(c_int, *const c_char, c_int, *const c_char, c_uint) -> c_int)
    else {
        return fail(libc::ENOSYS);
    };
    let r = f(od, old, nd, new, flags);
    if r == 0 {
        power::changed(c, Change::Rename);
    }
    r
}

/// Interposed: see the module's doc.
///
/// # Safety
/// As libc's.
#[no_mangle]
pub unsafe extern "C" fn unlink(path: *const c_char) -> c_int {
    let c = power::changing(libc::AT_FDCWD, path, libc::AT_FDCWD, std::ptr::null());
    let Some(f) = real!("unlink", unsafe extern "C" fn(*const c_char) -> c_int) else { return fail(libc::ENOSYS) };
    let r = f(path);
    if r == 0 {
        power::changed(c, Change::Unlink);
    }
    r
}

/// Interposed: see the module's doc.
///
/// # Safety
/// As libc's.
#[no_mangle]
pub unsafe extern "C" fn unlinkat(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int {
    let c = power::changing(dirfd, path, libc::AT_FDCWD, std::ptr::null());
    let Some(f) = real!("unlinkat", unsafe extern "C" fn(c_int, *const c_char, c_int) -> c_int) else {
        return fail(libc::ENOSYS);
    };
    let r = f(dirfd, path, flags);
    if r == 0 {
        power::changed(c, if flags & libc::AT_REMOVEDIR != 0 { Change::Rmdir } else { Change::Unlink });
    }
    r
}

/// Interposed: see the module's doc.
///
/// # Safety
/// As libc's.
#[no_mangle]
pub unsafe extern "C" fn rmdir(path: *const c_char) -> c_int {
    let c = power::changing(libc::AT_FDCWD, path, libc::AT_FDCWD, std::ptr::null());
    let Some(f) = real!("rmdir", unsafe extern "C" fn(*const c_char) -> c_int) else { return fail(libc::ENOSYS) };
    let r = f(path);
    if r == 0 {
        power::changed(c, Change::Rmdir);
    }
    r
}

/// Interposed: see the module's doc.
///
/// # Safety
/// As libc's.
#[no_mangle]
pub unsafe extern "C" fn mkdir(path: *const c_char, mode: mode_t) -> c_int {
    let c = power::changing(libc::AT_FDCWD, path, libc::AT_FDCWD, std::ptr::null());
    let Some(f) = real!("mkdir", unsafe extern "C" fn(*const c_char, mode_t) -> c_int) else {
        return fail(libc::ENOSYS);
    };
    let r = f(path, mode);
    if r == 0 {
        power::changed(c, Change::Mkdir);
    }
    r
}

/// Interposed: see the module's doc.
///
/// # Safety
/// As libc's.
#[no_mangle]
pub unsafe extern "C" fn mkdirat(dirfd: c_int, path: *const c_char, mode: mode_t) -> c_int {
    let c = power::changing(dirfd, path, libc::AT_FDCWD, std::ptr::null());
    let Some(f) = real!("mkdirat", unsafe extern "C" fn(c_int, *const c_char, mode_t) -> c_int) else {
        return fail(libc::ENOSYS);
    };
    let r = f(dirfd, path, mode);
    if r == 0 {
        power::changed(c, Change::Mkdir);
    }
    r
}
