/* model_files_expect.h — written by tools/gen_model_files.py (gguf 0.19.0, safetensors 0.8.0): the
 * fixtures of tests/data/model_files/ as the gguf and safetensors packages read them. */
typedef struct mf_tensor {
    const char *file, *name, *type_name; /* type_name: safetensors */
    uint32_t ggml_type;                  /* GGUF */
    int rank;
    int64_t dims[8];
    uint64_t offset, nbytes, fnv;
} mf_tensor;
#define MF_TYPES_ALIGNMENT 64
#define MF_TYPES_DATA_OFFSET 2816ull
#define MF_TYPES_N_KV 34  /* GGUFReader counts the header's three fields */
#define MF_SMALL_ALIGNMENT 32
#define MF_SMALL_DATA_OFFSET 448ull
#define MF_SMALL_N_KV 5
static const mf_tensor mf_types_gguf[] = {
    { NULL, "t.f32", NULL, 0u, 2, { 3, 5 }, 2816ull, 60ull, 0xb3eb981e77ea89e4ull },
    { NULL, "t.f16", NULL, 1u, 3, { 2, 3, 4 }, 2880ull, 48ull, 0x668cd0a40bcb8808ull },
    { NULL, "t.bf16", NULL, 30u, 1, { 7 }, 2944ull, 14ull, 0xedec072dafefc657ull },
    { NULL, "t.f64", NULL, 28u, 2, { 2, 2 }, 3008ull, 32ull, 0x164d23366b09971aull },
    { NULL, "t.i8", NULL, 24u, 1, { 5 }, 3072ull, 5ull, 0x4720bce05df44d12ull },
    { NULL, "t.i16", NULL, 25u, 1, { 3 }, 3136ull, 6ull, 0x6cc2481c436e03e3ull },
    { NULL, "t.i32", NULL, 26u, 1, { 4 }, 3200ull, 16ull, 0x5d87dc868b3d8c9full },
    { NULL, "t.i64", NULL, 27u, 1, { 2 }, 3264ull, 16ull, 0x6010ea7f7e7fbcbeull },
    { NULL, "t.f32_4d", NULL, 0u, 4, { 2, 1, 3, 2 }, 3328ull, 48ull, 0xe63fccedd9b92891ull },
    { NULL, "t.q4_0", NULL, 2u, 2, { 3, 64 }, 3392ull, 108ull, 0x10af9cd9b0415d04ull },
    { NULL, "t.q4_1", NULL, 3u, 2, { 3, 64 }, 3520ull, 120ull, 0x787150ec77bfdd5cull },
    { NULL, "t.q5_0", NULL, 6u, 2, { 3, 64 }, 3648ull, 132ull, 0xf190217612d52e2bull },
    { NULL, "t.q5_1", NULL, 7u, 2, { 3, 64 }, 3840ull, 144ull, 0x5f2493d1e0d16178ull },
    { NULL, "t.q8_0", NULL, 8u, 2, { 3, 64 }, 4032ull, 204ull, 0x517df539c892949dull },
    { NULL, "t.q2_k", NULL, 10u, 2, { 2, 256 }, 4288ull, 168ull, 0x18b5985a0829f3f0ull },
    { NULL, "t.q3_k", NULL, 11u, 2, { 2, 256 }, 4480ull, 220ull, 0x18cbd9092716da5cull },
    { NULL, "t.q4_k", NULL, 12u, 2, { 2, 256 }, 4736ull, 288ull, 0xb77fcf3d7a55731eull },
    { NULL, "t.q5_k", NULL, 13u, 2, { 2, 256 }, 5056ull, 352ull, 0xe4f38b17f66353edull },
    { NULL, "t.q6_k", NULL, 14u, 2, { 2, 256 }, 5440ull, 420ull, 0x38ea16b2bb52a540ull },
    { NULL, "t.q8_k", NULL, 15u, 2, { 2, 256 }, 5888ull, 584ull, 0xa913e102133fb772ull },
    { NULL, "t.iq2_xxs", NULL, 16u, 2, { 2, 256 }, 6528ull, 132ull, 0x576eb4bf6385990bull },
    { NULL, "t.iq4_nl", NULL, 20u, 2, { 3, 64 }, 6720ull, 108ull, 0xfdef44d08126e46cull },
    { NULL, "t.iq4_xs", NULL, 23u, 2, { 2, 256 }, 6848ull, 272ull, 0xd96b58129d6f1ac0ull },
    { NULL, "t.iq3_xxs", NULL, 18u, 2, { 2, 256 }, 7168ull, 196ull, 0x8816a3564c346a42ull },
    { NULL, "t.iq3_s", NULL, 21u, 2, { 2, 256 }, 7424ull, 220ull, 0x28f855a7d369b9beull },
    { NULL, "t.iq2_xs", NULL, 17u, 2, { 2, 256 }, 7680ull, 148ull, 0x48748af19b6049dfull },
    { NULL, "t.iq2_s", NULL, 22u, 2, { 2, 256 }, 7872ull, 164ull, 0x8a4e718093aa48e3ull },
    { NULL, "t.iq1_s", NULL, 19u, 2, { 2, 256 }, 8064ull, 100ull, 0x5b2759d9794b7130ull },
    { NULL, "t.iq1_m", NULL, 29u, 2, { 2, 256 }, 8192ull, 112ull, 0x6537d4a3fcabc798ull },
};
static const mf_tensor mf_small_gguf[] = {
    { NULL, "a.f32", NULL, 0u, 2, { 2, 3 }, 448ull, 24ull, 0x7a7ae9689851fce6ull },
    { NULL, "b.q4_0", NULL, 2u, 2, { 1, 32 }, 480ull, 18ull, 0xffcecbea7efc2adfull },
    { NULL, "c.f16", NULL, 1u, 1, { 4 }, 512ull, 8ull, 0xdd1a794eca534ba3ull },
};
static const mf_tensor mf_types_st[] = {
    { "types.safetensors", "st.u64", "U64", 4294967295u, 1, { 2 }, 1128ull, 16ull, 0xaf7ba38680344881ull },
    { "types.safetensors", "st.i64", "I64", 4294967295u, 1, { 2 }, 1144ull, 16ull, 0x5860edc7518b4cb1ull },
    { "types.safetensors", "st.f64", "F64", 4294967295u, 1, { 2 }, 1160ull, 16ull, 0x34c73f7eece25de6ull },
    { "types.safetensors", "st.empty", "F32", 4294967295u, 2, { 0, 3 }, 1176ull, 0ull, 0xcbf29ce484222325ull },
    { "types.safetensors", "st.f32", "F32", 4294967295u, 3, { 2, 2, 2 }, 1176ull, 32ull, 0x898aee7d01cc85a4ull },
    { "types.safetensors", "st.scalar", "F32", 4294967295u, 0, { 0 }, 1208ull, 4ull, 0xdf18e160e6d1cd9full },
    { "types.safetensors", "st.u32", "U32", 4294967295u, 1, { 2 }, 1212ull, 8ull, 0xe31420fa1efa9cf4ull },
    { "types.safetensors", "st.i32", "I32", 4294967295u, 1, { 3 }, 1220ull, 12ull, 0x2d9d38b288cdf851ull },
    { "types.safetensors", "st.bf16", "BF16", 4294967295u, 1, { 3 }, 1232ull, 6ull, 0x4d67911c9c756367ull },
    { "types.safetensors", "st.f16", "F16", 4294967295u, 2, { 2, 3 }, 1238ull, 12ull, 0x2d608ee8f1de8642ull },
    { "types.safetensors", "st.u16", "U16", 4294967295u, 1, { 3 }, 1250ull, 6ull, 0x2b2267814f6ae7eaull },
    { "types.safetensors", "st.i16", "I16", 4294967295u, 2, { 2, 2 }, 1256ull, 8ull, 0xa2ec1cda0cf3b7b4ull },
    { "types.safetensors", "st.f8_e4m3", "F8_E4M3", 4294967295u, 1, { 4 }, 1264ull, 4ull, 0x3fecba1f27638fe6ull },
    { "types.safetensors", "st.f8_e5m2", "F8_E5M2", 4294967295u, 1, { 4 }, 1268ull, 4ull, 0x0cd6c8aab69e34cdull },
    { "types.safetensors", "st.i8", "I8", 4294967295u, 1, { 4 }, 1272ull, 4ull, 0xdcf461ff87e64b48ull },
    { "types.safetensors", "st.u8", "U8", 4294967295u, 2, { 3, 2 }, 1276ull, 6ull, 0x4f4a80c4b4a843d4ull },
    { "types.safetensors", "st.bool", "BOOL", 4294967295u, 1, { 5 }, 1282ull, 5ull, 0xe4b8ead9252907d9ull },
};
static const mf_tensor mf_sharded_st[] = {
    { "sharded/model-00001-of-00002.safetensors", "model.norm.weight", "F32", 4294967295u, 1, { 8 }, 192ull, 32ull, 0x15727a4b85c8b5a7ull },
    { "sharded/model-00001-of-00002.safetensors", "model.embed.weight", "BF16", 4294967295u, 2, { 4, 8 }, 224ull, 64ull, 0xe650d8a4669d7938ull },
    { "sharded/model-00002-of-00002.safetensors", "lm_head.weight", "F16", 4294967295u, 2, { 4, 8 }, 112ull, 64ull, 0xfe72ba37efeeef9dull },
};
