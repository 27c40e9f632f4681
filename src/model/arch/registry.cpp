// The list of architectures: adding one is a file in this folder and a line here.
#include "model/arch.h"

namespace tessera {

extern const Arch kLlamaArch;
extern const Arch kFalconArch;
extern const Arch kBaichuanArch;
extern const Arch kStarcoderArch;
extern const Arch kRefactArch;
extern const Arch kPersimmonArch;
extern const Arch kGpt2Arch;
extern const Arch kGptneoxArch;
extern const Arch kMptArch;
extern const Arch kBloomArch;
extern const Arch kQwen2Arch;
extern const Arch kQwen2moeArch;
extern const Arch kDeepseek2Arch;
extern const Arch kPhi3Arch;
extern const Arch kGemmaArch;
extern const Arch kGemma2Arch;
extern const Arch kGraniteArch;
extern const Arch kCommandRArch;
extern const Arch kBertArch;
extern const Arch kNomicBertArch;
extern const Arch kOlmoeArch;
extern const Arch kOlmo2Arch;
extern const Arch kStarcoder2Arch;

namespace {
const Arch* const kArchs[] = {
    &kLlamaArch,
    &kFalconArch,
    &kBaichuanArch,
    &kStarcoderArch,
    &kRefactArch,
    &kPersimmonArch,
    &kGpt2Arch,
    &kGptneoxArch,
    &kMptArch,
    &kBloomArch,
    &kQwen2Arch,
    &kQwen2moeArch,
    &kPhi3Arch,
    &kGemmaArch,
    &kGemma2Arch,
    &kGraniteArch,
    &kCommandRArch,
    &kBertArch,
    &kNomicBertArch,
    &kOlmoeArch,
    &kOlmo2Arch,
    &kStarcoder2Arch,
    &kDeepseek2Arch,
};
}  // namespace

const Arch* find_arch(std::string_view name) {
  for (const Arch* a : kArchs) {
    if (a->name == name) return a;
  }
  return nullptr;
}

std::string registered_arch_names() {
  std::string names;
  for (const Arch* a : kArchs) names += (names.empty() ? "" : ", ") + std::string(a->name);
  return names;
}

std::span<const Arch* const> registered_archs() { return kArchs; }

}  // namespace tessera
