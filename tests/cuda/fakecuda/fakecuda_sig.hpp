// fakecuda_sig.hpp — parameter signatures for the fake CUDA driver
// (fakecuda.c). A cubin records each parameter's size but not its type, and
// the emulation calls every kernel through one all-int64 signature, so a
// float parameter would arrive in the wrong register. The emulated build of
// a candidate (fakecuda_kernels.c) includes this after cuda_emu.hpp and ends
// with FAKECUDA_SIG(kernel) for each kernel; the fake then refuses a launch
// of a kernel with a parameter that is not a pointer or an integer
// (CUDA_ERROR_NOT_SUPPORTED) instead of running it with garbage.
#include <type_traits>

// p pointer, i 32-bit integer, l 64-bit integer, f float, d double,
// s another integer size, ? anything else (a struct)
template <class T> constexpr char fakecuda_kind()
{
	using U = std::remove_cv_t<T>;
	if constexpr (std::is_pointer_v<U>)
		return 'p';
	else if constexpr (std::is_floating_point_v<U>)
		return sizeof(U) == 4 ? 'f' : 'd';
	else if constexpr (std::is_integral_v<U> || std::is_enum_v<U>)
		return sizeof(U) == 8 ? 'l' : sizeof(U) == 4 ? 'i' : 's';
	else
		return '?';
}

template <class F> struct fakecuda_sig;
template <class... A> struct fakecuda_sig<void(A...)> {
	static constexpr char s[] = { fakecuda_kind<A>()..., '\0' };
};

// extern "C" const char *const fakecuda_sig_<kernel> = "ppi";
#define FAKECUDA_SIG(k) extern "C" const char *const fakecuda_sig_##k = fakecuda_sig<decltype(k)>::s;
