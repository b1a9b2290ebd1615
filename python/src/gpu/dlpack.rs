//! The DLPack ABI (v1.0 and legacy) that [`CudaTensor::__dlpack__`](super::CudaTensor) exports:
//! the `repr(C)` structs, the export's context (what a capsule keeps alive), the deleters and
//! the capsule's destructor.

use std::ffi::{c_void, CStr};
use std::sync::Arc;

use hydrofeed_tfbridge::gpu::DeviceBuf;
use hydrofeed_tfbridge::DType;

#[repr(C)]
#[derive(Clone, Copy)]
pub(super) struct DLDevice {
    pub(super) device_type: i32,
    pub(super) device_id: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub(super) struct DLDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

#[repr(C)]
pub(super) struct DLTensor {
    pub(super) data: *mut c_void,
    pub(super) device: DLDevice,
    pub(super) ndim: i32,
    pub(super) dtype: DLDataType,
    pub(super) shape: *mut i64,
    pub(super) strides: *mut i64,
    pub(super) byte_offset: u64,
}

#[repr(C)]
pub(super) struct DLManagedTensor {
    pub(super) dl_tensor: DLTensor,
    pub(super) manager_ctx: *mut c_void,
    pub(super) deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

#[repr(C)]
pub(super) struct DLPackVersion {
    pub(super) major: u32,
    pub(super) minor: u32,
}

#[repr(C)]
pub(super) struct DLManagedTensorVersioned {
    pub(super) version: DLPackVersion,
    pub(super) manager_ctx: *mut c_void,
    pub(super) deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    pub(super) flags: u64,
    pub(super) dl_tensor: DLTensor,
}

pub(super) const KDL_CUDA: i32 = 2;
pub(super) const LEGACY: &CStr = c"dltensor";
pub(super) const VERSIONED: &CStr = c"dltensor_versioned";

/// What a DLPack export keeps alive: its shape, the device buffer, and the consumer's stream
/// (the buffer's release is ordered after the work queued there).
pub(super) struct Ctx {
    pub(super) shape: Vec<i64>,
    pub(super) buf: Arc<DeviceBuf>,
    pub(super) stream: Option<usize>,
}

fn release(ctx: *mut c_void) {
    if ctx.is_null() {
        return;
    }
    // SAFETY: made by `Box::into_raw` in `CudaTensor::export`, released once (by the deleter).
    let ctx = unsafe { Box::from_raw(ctx.cast::<Ctx>()) };
    let _ = ctx.buf.released_on(ctx.stream);
}

pub(super) unsafe extern "C" fn delete_legacy(t: *mut DLManagedTensor) {
    if !t.is_null() {
        // SAFETY: made by `Box::into_raw` in `CudaTensor::export`; the consumer calls the
        // deleter once.
        let t = unsafe { Box::from_raw(t) };
        release(t.manager_ctx);
    }
}

pub(super) unsafe extern "C" fn delete_versioned(t: *mut DLManagedTensorVersioned) {
    if !t.is_null() {
        // SAFETY: as for `delete_legacy`.
        let t = unsafe { Box::from_raw(t) };
        release(t.manager_ctx);
    }
}

/// The capsule's destructor: if no consumer took the tensor (the capsule still has its
/// original name), delete it here.
pub(super) unsafe extern "C" fn capsule_destructor(cap: *mut pyo3::ffi::PyObject) {
    // SAFETY: `cap` is a live capsule (Python calls this while destroying it).
    unsafe {
        if pyo3::ffi::PyCapsule_IsValid(cap, VERSIONED.as_ptr()) == 1 {
            let p = pyo3::ffi::PyCapsule_GetPointer(cap, VERSIONED.as_ptr());
            delete_versioned(p.cast());
        } else if pyo3::ffi::PyCapsule_IsValid(cap, LEGACY.as_ptr()) == 1 {
            let p = pyo3::ffi::PyCapsule_GetPointer(cap, LEGACY.as_ptr());
            delete_legacy(p.cast());
        } else {
            // Consumed ("used_dltensor..."): the consumer owns it now.
            pyo3::ffi::PyErr_Clear();
        }
    }
}

pub(super) fn dl_dtype(d: DType) -> DLDataType {
    let (code, bits) = match d {
        DType::Bool => (6, 8),
        DType::I8 => (0, 8),
        DType::I16 => (0, 16),
        DType::I32 => (0, 32),
        DType::I64 => (0, 64),
        DType::U8 => (1, 8),
        DType::U16 => (1, 16),
        DType::U32 => (1, 32),
        DType::U64 => (1, 64),
        DType::F16 => (2, 16),
        DType::F32 => (2, 32),
        DType::F64 => (2, 64),
    };
    DLDataType {
        code,
        bits,
        lanes: 1,
    }
}
