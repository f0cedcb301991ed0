//! Links the core crates into a `no_std` staticlib; see Cargo.toml.
#![no_std]

use core::alloc::{GlobalAlloc, Layout};

struct NoAlloc;

// SAFETY: never hands out memory; this crate is only built, never run.
unsafe impl GlobalAlloc for NoAlloc {
    unsafe fn alloc(&self, _layout: Layout) -> *mut u8 {
        core::ptr::null_mut()
    }
    unsafe fn dealloc(&self, _ptr: *mut u8, _layout: Layout) {}
}

#[global_allocator]
static ALLOCATOR: NoAlloc = NoAlloc;

#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    loop {}
}

/// Forces the core crates to be linked in.
#[unsafe(no_mangle)]
pub extern "C" fn rowkit_nostd_check() -> usize {
    let range = rowkit_codec::model::RowRange::prefix(b"k");
    let m = rowkit_statemachines::SplitMix64::new(1);
    core::hint::black_box((&range, &m));
    core::mem::size_of_val(&range)
}
