//! Rows Spark holds pickled, made into Python objects: `unpickle_frame(column, batched)`.
//!
//! A Spark feeding task forwards an RDD's elements as Spark pickled them (one binary value a
//! pickle, a list of rows where Spark batched them: `hydrofeed.spark.rows.pickled_frames`), and
//! the trainer makes them into objects, under its one GIL: for rows of numbers that is most of
//! the trainer's time (`benches/README.md`, Spark). The opcodes such rows are made of (lists,
//! tuples, dicts, floats, ints, strings, bytes, `None`, booleans; protocols 2 to 5) are decoded
//! here, a run of floats in a list (`MARK BINFLOAT... APPENDS`) straight into a list of its
//! size; every other pickle, and anything this decoder does not take as well-formed, goes to
//! `pickle.loads`, whose objects and errors are then the result. So the objects are those
//! `pickle.loads` makes: the same types, values and order, and the same sharing (an object a
//! pickle refers back to, `BINGET`, as a dict row's keys are, is the one object).

use arrow_array::{Array, GenericBinaryArray, OffsetSizeTrait};
use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyList, PyTuple};
use pyo3_arrow::PyArray;

/// The rows of a frame of pickled elements (a `binary` or `large_binary` column, one pickle a
/// value, nulls refused): each value's object, or where `batched` the items of each value's
/// list. The same objects as `pickle.loads` of each value.
#[pyfunction]
pub fn unpickle_frame<'py>(
    py: Python<'py>,
    column: PyArray,
    batched: bool,
) -> PyResult<Bound<'py, PyList>> {
    crate::arena::install();
    let array = column.array();
    let out = PyList::empty(py);
    let mut each = |blob: &[u8]| -> PyResult<()> {
        let obj = match decode(py, blob)? {
            Some(obj) => obj,
            None => py
                .import("pickle")?
                .getattr("loads")?
                .call1((PyBytes::new(py, blob),))?,
        };
        if !batched {
            return out.append(obj);
        }
        if let Ok(list) = obj.cast_exact::<PyList>() {
            for row in list.iter() {
                out.append(row)?;
            }
            return Ok(());
        }
        for row in obj.try_iter()? {
            out.append(row?)?;
        }
        Ok(())
    };
    if let Some(a) = array.as_any().downcast_ref::<GenericBinaryArray<i32>>() {
        for_each_value(a, &mut each)?;
    } else if let Some(a) = array.as_any().downcast_ref::<GenericBinaryArray<i64>>() {
        for_each_value(a, &mut each)?;
    } else {
        return Err(PyTypeError::new_err(format!(
            "a frame of pickled rows is a binary column, not {}",
            array.data_type()
        )));
    }
    Ok(out)
}

/// `f` of each value of `a` in order; a null is refused.
fn for_each_value<O: OffsetSizeTrait>(
    a: &GenericBinaryArray<O>,
    f: &mut impl FnMut(&[u8]) -> PyResult<()>,
) -> PyResult<()> {
    for i in 0..a.len() {
        if a.is_null(i) {
            return Err(PyTypeError::new_err("a null in a frame of pickled rows"));
        }
        f(a.value(i))?;
    }
    Ok(())
}

// The opcodes decoded (Lib/pickle.py's names).
const MARK: u8 = b'(';
const STOP: u8 = b'.';
const PROTO: u8 = 0x80;
const FRAME: u8 = 0x95;
const MEMOIZE: u8 = 0x94;
const BINPUT: u8 = b'q';
const LONG_BINPUT: u8 = b'r';
const BINGET: u8 = b'h';
const LONG_BINGET: u8 = b'j';
const EMPTY_LIST: u8 = b']';
const EMPTY_TUPLE: u8 = b')';
const EMPTY_DICT: u8 = b'}';
const APPEND: u8 = b'a';
const APPENDS: u8 = b'e';
const SETITEM: u8 = b's';
const SETITEMS: u8 = b'u';
const LIST: u8 = b'l';
const TUPLE: u8 = b't';
const TUPLE1: u8 = 0x85;
const TUPLE2: u8 = 0x86;
const TUPLE3: u8 = 0x87;
const BINFLOAT: u8 = b'G';
const BININT: u8 = b'J';
const BININT1: u8 = b'K';
const BININT2: u8 = b'M';
const LONG1: u8 = 0x8a;
const NONE: u8 = b'N';
const NEWTRUE: u8 = 0x88;
const NEWFALSE: u8 = 0x89;
const SHORT_BINUNICODE: u8 = 0x8c;
const BINUNICODE: u8 = b'X';
const BINUNICODE8: u8 = 0x8d;
const SHORT_BINBYTES: u8 = b'C';
const BINBYTES: u8 = b'B';
const BINBYTES8: u8 = 0x8e;

/// The objects a pickle stored to refer back to (`MEMOIZE`, `BINPUT`; `BINGET` takes them).
#[derive(Default)]
struct Memo<'py> {
    slots: Vec<Option<Bound<'py, PyAny>>>,
    /// The slot last stored.
    last: Option<usize>,
}

impl<'py> Memo<'py> {
    fn len(&self) -> usize {
        self.slots.len()
    }

    /// Stores `top` (None: an empty stack, a malformed pickle) in slot `i` of a pickle of
    /// `size` bytes. A pickler numbers its slots from 0, one an object, so a slot past the
    /// pickle's size is not one it wrote: left to pickle.loads rather than grown to.
    fn put(&mut self, i: usize, top: Option<&Bound<'py, PyAny>>, size: usize) -> Option<()> {
        if i >= size {
            return None;
        }
        if self.slots.len() <= i {
            self.slots.resize(i + 1, None);
        }
        self.slots[i] = Some(top?.clone());
        self.last = Some(i);
        Some(())
    }

    fn get(&self, i: usize) -> Option<Bound<'py, PyAny>> {
        self.slots.get(i)?.clone()
    }

    /// Whether the empty list `list` on the stack may be replaced by a list made at its
    /// size: nothing refers to it but the stack and, maybe, the slot last stored (a list is
    /// stored as it is made, before its items come).
    fn replaceable(&self, list: &Bound<'py, PyAny>) -> bool {
        let in_last = self
            .last
            .and_then(|i| self.slots[i].as_ref())
            .is_some_and(|o| o.is(list));
        // SAFETY: `list` is a live object (held by the stack).
        let refs = unsafe { ffi::Py_REFCNT(list.as_ptr()) };
        refs == 1 + isize::from(in_last) && list.len().is_ok_and(|n| n == 0)
    }

    /// `made` in the place of `old` in the slot last stored, where `old` is there.
    fn replace(&mut self, old: &Bound<'py, PyAny>, made: &Bound<'py, PyAny>) {
        if let Some(slot) = self.last.and_then(|i| self.slots.get_mut(i)) {
            if slot.as_ref().is_some_and(|o| o.is(old)) {
                *slot = Some(made.clone());
            }
        }
    }
}

/// The bytes of a pickle, read forward.
struct Input<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Input<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let s = self.data.get(self.at..end)?;
        self.at = end;
        Some(s)
    }

    fn byte(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }

    fn le(&mut self, n: usize) -> Option<u64> {
        let b = self.take(n)?;
        Some(b.iter().rev().fold(0u64, |v, &x| (v << 8) | u64::from(x)))
    }

    fn len(&mut self, n: usize) -> Option<usize> {
        usize::try_from(self.le(n)?).ok()
    }

    /// The number of `BINFLOAT`s from here up to the first other opcode.
    fn float_run(&self) -> usize {
        let rest = &self.data[self.at..];
        rest.chunks_exact(9)
            .take_while(|c| c[0] == BINFLOAT)
            .count()
    }
}

/// `data`'s object, or None where `pickle.loads` is to make it (an opcode not decoded here, a
/// malformed or truncated pickle, a string that is not UTF-8). Errors: only those of making
/// an object (memory).
fn decode<'py>(py: Python<'py>, data: &[u8]) -> PyResult<Option<Bound<'py, PyAny>>> {
    let mut inp = Input { data, at: 0 };
    let mut stack: Vec<Bound<'py, PyAny>> = Vec::with_capacity(64);
    let mut marks: Vec<usize> = Vec::new();
    let mut memo = Memo::default();
    macro_rules! get {
        ($e:expr) => {
            match $e {
                Some(v) => v,
                None => return Ok(None),
            }
        };
    }
    loop {
        match get!(inp.byte()) {
            PROTO => {
                let p = get!(inp.byte());
                if !(2..=5).contains(&p) {
                    return Ok(None);
                }
            }
            FRAME => {
                // pickle requires the frame's bytes to be there.
                let n = get!(inp.len(8));
                if n > inp.data.len() - inp.at {
                    return Ok(None);
                }
            }
            MEMOIZE => get!(memo.put(memo.len(), top_above(&stack, &marks), data.len())),
            BINPUT => {
                let i = get!(inp.len(1));
                get!(memo.put(i, top_above(&stack, &marks), data.len()));
            }
            LONG_BINPUT => {
                let i = get!(inp.len(4));
                get!(memo.put(i, top_above(&stack, &marks), data.len()));
            }
            BINGET => {
                let i = get!(inp.len(1));
                stack.push(get!(memo.get(i)));
            }
            LONG_BINGET => {
                let i = get!(inp.len(4));
                stack.push(get!(memo.get(i)));
            }
            MARK => {
                let run = inp.float_run();
                let ends = inp.data.get(inp.at + run * 9) == Some(&APPENDS);
                match top_above(&stack, &marks) {
                    Some(top) if run > 0 && ends && top.is_exact_instance_of::<PyList>() => {
                        let floats = get!(inp.take(run * 9));
                        inp.at += 1; // the APPENDS
                        let at = stack.len() - 1;
                        let items = floats
                            .chunks_exact(9)
                            .map(|f| PyFloat::new(py, be_f64(&f[1..])).into_any());
                        extend_list(&mut stack[at], &mut memo, items, |_| float_list(py, floats))?;
                    }
                    _ => marks.push(stack.len()),
                }
            }
            STOP => {
                return Ok(if stack.len() == 1 && marks.is_empty() {
                    stack.pop()
                } else {
                    None
                })
            }
            EMPTY_LIST => stack.push(PyList::empty(py).into_any()),
            EMPTY_TUPLE => stack.push(PyTuple::empty(py).into_any()),
            EMPTY_DICT => stack.push(PyDict::new(py).into_any()),
            op @ (APPEND | APPENDS) => {
                let from = if op == APPEND {
                    stack.len().saturating_sub(1)
                } else {
                    get!(marks.pop())
                };
                if from == 0 || from > stack.len() || from - 1 < floor(&marks) {
                    return Ok(None);
                }
                let items: Vec<_> = stack.drain(from..).collect();
                if !stack[from - 1].is_exact_instance_of::<PyList>() {
                    return Ok(None);
                }
                extend_list(
                    &mut stack[from - 1],
                    &mut memo,
                    items.into_iter(),
                    |items| Ok(PyList::new(py, items)?.into_any()),
                )?;
            }
            op @ (SETITEM | SETITEMS) => {
                let from = if op == SETITEM {
                    stack.len().saturating_sub(2)
                } else {
                    get!(marks.pop())
                };
                if from == 0
                    || from > stack.len()
                    || from - 1 < floor(&marks)
                    || !(stack.len() - from).is_multiple_of(2)
                {
                    return Ok(None);
                }
                let items: Vec<_> = stack.drain(from..).collect();
                let Ok(dict) = stack[from - 1].cast_exact::<PyDict>() else {
                    return Ok(None);
                };
                for kv in items.chunks_exact(2) {
                    if kv[0].hash().is_err() {
                        return Ok(None); // unhashable: pickle.loads says so
                    }
                    dict.set_item(&kv[0], &kv[1])?;
                }
            }
            op @ (LIST | TUPLE) => {
                let from = get!(marks.pop());
                if from > stack.len() {
                    return Ok(None);
                }
                let items: Vec<_> = stack.drain(from..).collect();
                let made = if op == LIST {
                    PyList::new(py, items)?.into_any()
                } else {
                    PyTuple::new(py, items)?.into_any()
                };
                stack.push(made);
            }
            op @ (TUPLE1 | TUPLE2 | TUPLE3) => {
                let n = usize::from(op - TUPLE1 + 1);
                if stack.len() < n || stack.len() - n < floor(&marks) {
                    return Ok(None);
                }
                let items: Vec<_> = stack.drain(stack.len() - n..).collect();
                stack.push(PyTuple::new(py, items)?.into_any());
            }
            BINFLOAT => {
                let b = get!(inp.take(8));
                stack.push(PyFloat::new(py, be_f64(b)).into_any());
            }
            BININT => {
                let v = get!(inp.le(4)) as u32 as i32;
                stack.push(v.into_pyobject(py)?.into_any());
            }
            BININT1 => {
                let v = get!(inp.byte());
                stack.push(v.into_pyobject(py)?.into_any());
            }
            BININT2 => {
                let v = get!(inp.le(2)) as u16;
                stack.push(v.into_pyobject(py)?.into_any());
            }
            LONG1 => {
                let n = usize::from(get!(inp.byte()));
                if n > 8 {
                    return Ok(None);
                }
                let raw = get!(inp.le(n));
                // Two's complement of n bytes, sign-extended.
                let v = if n == 0 {
                    0
                } else {
                    let shift = 64 - 8 * n as u32;
                    ((raw << shift) as i64) >> shift
                };
                stack.push(v.into_pyobject(py)?.into_any());
            }
            NONE => stack.push(py.None().into_bound(py)),
            NEWTRUE => stack.push(PyBool::new(py, true).to_owned().into_any()),
            NEWFALSE => stack.push(PyBool::new(py, false).to_owned().into_any()),
            op @ (SHORT_BINUNICODE | BINUNICODE | BINUNICODE8) => {
                let n = get!(inp.len(match op {
                    SHORT_BINUNICODE => 1,
                    BINUNICODE => 4,
                    _ => 8,
                }));
                let s = get!(inp.take(n));
                stack.push(get!(utf8(py, s)));
            }
            op @ (SHORT_BINBYTES | BINBYTES | BINBYTES8) => {
                let n = get!(inp.len(match op {
                    SHORT_BINBYTES => 1,
                    BINBYTES => 4,
                    _ => 8,
                }));
                let b = get!(inp.take(n));
                stack.push(PyBytes::new(py, b).into_any());
            }
            _ => return Ok(None),
        }
    }
}

/// Appends `items` to the exact list `slot`: where nothing else refers to it yet (an empty
/// list just made, maybe stored in the memo's last slot), it is replaced by the list `whole`
/// makes of them at their number, in the stack and the memo alike; otherwise they are
/// appended one by one.
fn extend_list<'py, I: ExactSizeIterator<Item = Bound<'py, PyAny>>>(
    slot: &mut Bound<'py, PyAny>,
    memo: &mut Memo<'py>,
    items: I,
    whole: impl FnOnce(I) -> PyResult<Bound<'py, PyAny>>,
) -> PyResult<()> {
    if memo.replaceable(slot) {
        let made = whole(items)?;
        memo.replace(slot, &made);
        *slot = made;
        return Ok(());
    }
    let list = slot.cast_exact::<PyList>().expect("an exact list");
    items.into_iter().try_for_each(|item| list.append(item))
}

/// A list object of CPython's default builds (`Include/cpython/listobject.h`, the same from
/// 3.11 on; abi3 modules do not load into free-threaded builds). The stable ABI reaches a
/// list's items only through `PyList_SetItem`, which checks its arguments and releases the
/// item it replaces, one call an item: a list made here at its size is filled in place.
#[repr(C)]
struct ListObject {
    _ob_refcnt: ffi::Py_ssize_t,
    _ob_type: *mut ffi::PyTypeObject,
    ob_size: ffi::Py_ssize_t,
    ob_item: *mut *mut ffi::PyObject,
    allocated: ffi::Py_ssize_t,
}

/// A float object of CPython's default builds (`Include/cpython/floatobject.h`).
#[repr(C)]
struct FloatObject {
    ob_refcnt: ffi::Py_ssize_t,
    ob_type: *mut ffi::PyTypeObject,
    ob_fval: f64,
}

/// Whether floats are made by [`new_float`] itself: on CPython before 3.13, where making one
/// is the allocation and its three fields; 3.13 added reference tracers
/// (`PyRefTracer_SetTracer`), which see every object made through `PyFloat_FromDouble`.
static OWN_FLOATS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();

/// The float `v` (a new reference; null with `MemoryError` set where memory ran out): what
/// `PyFloat_FromDouble` makes, less its free list (empty while rows are made faster than
/// they are dropped) and its calls for tracers where there are none. `float_dealloc` frees
/// it as any float, to the free list or `PyObject_Free`.
fn new_float(py: Python<'_>, v: f64) -> *mut ffi::PyObject {
    // SAFETY: the GIL is held (`py`). The object is written whole before it is handed out,
    // as `PyFloat_FromDouble` writes it: one reference, the float type (static: not counted),
    // the value; `PyObject_Malloc` is the allocator `float_dealloc` frees with.
    unsafe {
        if !*OWN_FLOATS.get_or_init(|| py.version_info() < (3, 13)) {
            return ffi::PyFloat_FromDouble(v);
        }
        let p = ffi::PyObject_Malloc(std::mem::size_of::<FloatObject>()).cast::<FloatObject>();
        if p.is_null() {
            return ffi::PyErr_NoMemory();
        }
        p.write(FloatObject {
            ob_refcnt: 1,
            ob_type: std::ptr::addr_of_mut!(ffi::PyFloat_Type),
            ob_fval: v,
        });
        p.cast()
    }
}

/// A new list of the `BINFLOAT`s `floats` (9 bytes each), its items written in place. Its
/// `0.0`s (the bits of positive zero; `-0.0` is another value) are one float object: images
/// and one-hot vectors fed as lists are mostly zeros, and each float costs an allocation to
/// make and a free to drop. Floats are immutable; only `is` and `id()` tell the difference, as
/// they do for the small values CPython shares itself.
fn float_list<'py>(py: Python<'py>, floats: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    let n = floats.len() / 9;
    // SAFETY: the GIL is held. The list is made empty, then given an item array of `n` slots
    // from `PyMem_Malloc` (what `list_dealloc` frees with `PyMem_Free`; `PyList_New(n)` would
    // clear it with `calloc` first, only for every slot to be written next), its `allocated`
    // set to `n` and its size kept at the items set so far: the list is sound at every step,
    // and on an error it is dropped with those. Each item is set once, to a new reference the
    // list then owns (the shared zero gains one per item after the first, which owns the one
    // it was made with); no code runs in between that could see the list (floats are not
    // tracked by the collector, so making one starts no collection).
    unsafe {
        let list = ffi::PyList_New(0);
        if list.is_null() {
            return Err(PyErr::fetch(py));
        }
        let list = Bound::from_owned_ptr(py, list);
        if n == 0 {
            return Ok(list);
        }
        let obj = list.as_ptr().cast::<ListObject>();
        let items = ffi::PyMem_Malloc(n * std::mem::size_of::<*mut ffi::PyObject>())
            .cast::<*mut ffi::PyObject>();
        if items.is_null() {
            return Err(pyo3::exceptions::PyMemoryError::new_err(format!(
                "no memory for a list of {n} floats"
            )));
        }
        (*obj).ob_item = items;
        (*obj).allocated = n as ffi::Py_ssize_t;
        let mut zero: *mut ffi::PyObject = std::ptr::null_mut();
        for (i, f) in floats.chunks_exact(9).enumerate() {
            let bits = u64::from_be_bytes(f[1..].try_into().expect("8 bytes"));
            let v = if bits == 0 && !zero.is_null() {
                ffi::Py_INCREF(zero);
                zero
            } else {
                let v = new_float(py, f64::from_bits(bits));
                if v.is_null() {
                    (*obj).ob_size = i as ffi::Py_ssize_t;
                    return Err(PyErr::fetch(py));
                }
                if bits == 0 {
                    zero = v;
                }
                v
            };
            *items.add(i) = v;
        }
        (*obj).ob_size = n as ffi::Py_ssize_t;
        Ok(list)
    }
}

/// Where the items of the innermost open mark begin: pickle reaches no further down.
fn floor(marks: &[usize]) -> usize {
    marks.last().copied().unwrap_or(0)
}

/// The top of the stack, where it lies above the innermost mark.
fn top_above<'a, 'py>(
    stack: &'a [Bound<'py, PyAny>],
    marks: &[usize],
) -> Option<&'a Bound<'py, PyAny>> {
    stack.last().filter(|_| stack.len() > floor(marks))
}

fn be_f64(b: &[u8]) -> f64 {
    f64::from_be_bytes(b.try_into().expect("8 bytes"))
}

/// A `str` of UTF-8 bytes as pickle decodes them (`surrogatepass`); None where they are not.
fn utf8<'py>(py: Python<'py>, s: &[u8]) -> Option<Bound<'py, PyAny>> {
    // SAFETY: the GIL is held; `s` is a live slice of `s.len()` bytes; a null result's error is
    // taken (cleared) here.
    unsafe {
        let p = ffi::PyUnicode_DecodeUTF8(
            s.as_ptr().cast(),
            s.len() as ffi::Py_ssize_t,
            c"surrogatepass".as_ptr(),
        );
        if p.is_null() {
            drop(PyErr::take(py));
            return None;
        }
        Some(Bound::from_owned_ptr(py, p))
    }
}
