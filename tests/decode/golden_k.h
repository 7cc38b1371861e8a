/* golden_k.h — llama.cpp's own numbers for the low-bit types (version 1),
 * for test_quant_k.c. Made outside this repository by a small C program
 * linked against ggml as vendored in llama-cpp-python 0.3.36 (llama.cpp's
 * CMake, Release, GGML_NATIVE, on the 2-core AVX2/AVX-512 development VM,
 * 2026-12-02). Per type: a row of 512 weights, fill(w, 512, 2024) of
 * test_quant_k.c times 0.05, quantized by ggml_quantize_chunk (no importance
 * matrix: llama.cpp's optimising quantizers, not ours); ggml's to_float of
 * that row (FNV-1a 64 of the 512 floats' bytes, their sum in double, values
 * 0, 1 and 511); and ggml's vec_dot of the row with fill(x, 512, 7)
 * encoded by ggml's from_float of the type's vec type (Q8_K; Q8_0 for
 * IQ4_NL). Nothing here is llama.cpp code: bytes and numbers only. */
#ifndef GOLDEN_K_H
#define GOLDEN_K_H

#include <stdint.h>

struct golden_k {
	uint32_t type;       /* ggml type id */
	size_t bytes;        /* of the quantized row */
	const char *hex;     /* the quantized row */
	uint64_t deq_fnv;    /* FNV-1a 64 of ggml's dequantized floats */
	double deq_sum;
	float dot;           /* ggml's vec_dot against the encoded activations */
	float y0, y1, y511;  /* dequantized values 0, 1, 511 */
};

static const struct golden_k golden_k[] = {
	{ DEC_T_Q2_K, 168,
	  "4add9ebc9cc9ff69a9acce9f8c8bdaded09981b5a4bbd65118aa846666d464616265066abdbaaa7e9a3684e4"
	  "2a3a72bb978bd9c7d4161d87b6b9bb9b165281a6a465a762eaae8564f656952195b686e444228525cfbdac49"
	  "fead9a8dac8f8ded9d5dbd6dea5ae9ee32aa55e709ec223eaa79a78726ee26655505132f96926e637648961a"
	  "e711159e86b574d9221a65b597cbab15d96548281e1bd94951581ab85959ce64bc219825",
	  0x7a7c342a87780fc9ull, 1.048614501953125, 3.49782991f, -0x1.614p-4, 0x1.28p-5, 0x1.dbp-7 },
	{ DEC_T_Q3_K, 220,
	  "fdfeecdbc94a6ef4b7aa3d70425dc330b910ab2b8687f7bfa33df030ffaffd97c50b37006d4881874d1a3eee"
	  "f28da5b331fe82709e80c15cd5ac8c39889415a70222826e4d0f0f221012c7c60b4426e077dc30e7ef226223"
	  "82b051286243b0afb8583cecc42ba072cff0003c169aff636edbf5ab22cd735ea5a7ffd6dd697f957fbfaae8"
	  "7bfdd773ed3f5f18639988d186bc5131d38e48cc442901f30f1f9011c110629ef79740e862067008f2b8c71f"
	  "56017007c08f4908271253aa0b070134e3a27680001001c24283ccfc5b265b3878ab5e07b6173f0fcf305a19",
	  0x8c07d5543313ff01ull, 0.91803359985351562, 5.68644428f, -0x1.242p-4, 0x1.242p-4, -0x0p+0 },
	{ DEC_T_Q5_K, 352,
	  "250dbc1cbbebf4fbfdf0bafd1fafa6f59c97899d8c0f2d91d2c770350508864581689150feff8b46fb148848"
	  "83d79def2da352f1ea9fe922eba5e7e7f8ca4d0302e6f5fff70034fd42bfe0a38070423af0d2170e493f905f"
	  "0febe48785af7665fc1d90ee63522fd335b862be8f831247d6e8f7b6829cbcc6d1f72c476c2e09dea31ecf83"
	  "33f6e7c006d1cd3ee7e2c0030e13aa514c2a1e000a3affde2c7b20e48fe51ed1f02255f2b8ad4801565781b2"
	  "240d651df4f2f8f3b3efbfedc757aa7f9f010e3ba54340ad122e45c797b63509a7cf87647232a1270f8917e5"
	  "8782bf4760f64ac00615ebba7fb03084041badbf01d313ef0729ddbc10a1f7d90172076071c6556f47feb773"
	  "40a2530af1dfe31475f623e5bb693e55a25dc8f4afe62071e76cd8f12dbcf15ba07ebce8f79588cb194ff203"
	  "460f1e0f09f7f800ecdca366ae0a59fd10eacb6b4d1cd5092774ee2dfe022476905eebe5db3bac8e1e2fc6e5",
	  0xde191258aca6f8ffull, 0.4119868278503418, 4.81921291f, -0x1.51728p-5, 0x1.1e914p-4, -0x1.aa5p-7 },
	{ DEC_T_IQ4_NL, 288,
	  "f1986ad54687db7052966a84fce3837b69252f17016d7277f67d97f1af4d6646c7c51aa047185869036fad9f"
	  "77a727ce116c7ba79bcbe0988079c6974545629e5fb9492cccc27d5db897e4930d646f4adaf4477d9193da69"
	  "7ce9cc99a86897b95b0b8299788795d47c7e9e688799673c695d5849b75d2272a057b838dd545d18c7687d5a"
	  "f980a067d7499605a0a2c8d67718989ba4773b4be5ed7780c8da8a15ce8f14188cf89a7e809967e59c4ef16d"
	  "88c984c54219979289954a3552987058b89ce72e68615598c30ae484aed8ead32e42ad8fb89968c70c99a379"
	  "dbd638098e79a6c829eb939453c974188612768fb974877b047c7487676ddd2551997749ca376e7181c89798"
	  "83027b6cb7382999027f5dc8c7d809839e5fb9376653188e",
	  0xa76581a5e9b315b2ull, 0.64320182800292969, 4.47097921f, -0x1.ee24p-5, 0x1.59e6p-4, -0x1.4a4p-9 },
	{ DEC_T_IQ4_XS, 272,
	  "cc053cc045580b826ad54687db7052966a84fce3837b6925016d7277f67d97f1af4d6646c7c51aa05869036f"
	  "ad9f77a727cd116c7ba79bcb8079c6974545629e5fb9492cccc27d5de4930d646f4adaf4477d9193da697ce9"
	  "a86897b95b0b8299788795d47c7e9e68673c695d5849b75d2272a057b838dd54c7687d5af980a067d749a605"
	  "a0a2c8d651053f0c9b6fb210989ba4773b4be5ed7780c8da8a15ce8f8cf89a7e809967e59c4ef16d88c984c5"
	  "97a289954a3552987058b89ce72e6861c30ae484aed8ead32e42ad8fb89968c7a379dbd638098e79a6c829eb"
	  "939453c98612768fb974877b047c7487676ddd257749ca376e7181c8979883027b6cb738027f5dc8c7d80983"
	  "9e5fb9376653188e",
	  0xf16037c5df271efeull, 0.67982912063598633, 4.30326223f, -0x1.e91c8p-5, 0x1.5660cp-4, -0x1.499ep-9 },
};

#endif
