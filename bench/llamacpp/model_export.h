// The same model weights written twice: as a Hugging Face checkpoint (config.json +
// model.safetensors, what decodelab loads) and as a GGUF file (what llama.cpp loads), so
// that both engines run identical parameters. GGUF follows llama.cpp's own converter in
// the two places where its layout differs: q_proj and k_proj rows are permuted within
// each head from Hugging Face's rotate-half RoPE order to llama.cpp's interleaved pairs,
// and norm weights are stored as F32. The vocabulary is synthetic: token i is the single
// character U+4E00 + i, so a prompt of token ids is a string that llama.cpp's SentencePiece
// tokenizer splits back into exactly those ids (no merges exist, no BOS, no space prefix),
// and generated text maps back to ids one character each.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/backend.h"
#include "engine/model/model_config.h"
#include "engine/model/weights.h"

namespace decodelab::bench {

// Writes `directory`/config.json and `directory`/model.safetensors (the directory is created).
void write_hf_checkpoint(const std::filesystem::path& directory, const ModelConfig& config, ModelWeights& weights,
                         Backend& backend);

// Writes a llama-architecture GGUF with the synthetic vocabulary. Refuses (InputError) a
// config llama.cpp would run differently: rope scaling, or a head_dim other than
// hidden_size / num_attention_heads.
void write_gguf(const std::filesystem::path& file, const ModelConfig& config, ModelWeights& weights, Backend& backend);

// The synthetic vocabulary: token id -> its text (one UTF-8 character), and back.
std::string token_text(int32_t id);
std::string tokens_text(const std::vector<int32_t>& ids);
// Ids of the characters of `text`; characters outside the vocabulary are skipped and
// counted in *unknown when given.
std::vector<int32_t> text_tokens(const std::string& text, int32_t vocab_size, int* unknown = nullptr);

// The permutation llama.cpp's converter applies to q_proj/k_proj rows: within each head of
// `head_dim` rows, GGUF row 2j + i holds Hugging Face row i·head_dim/2 + j (i in {0, 1}).
// Returns, for each GGUF row, the Hugging Face row it is copied from.
std::vector<int64_t> rope_row_order(int64_t rows, int head_dim);

}  // namespace decodelab::bench
