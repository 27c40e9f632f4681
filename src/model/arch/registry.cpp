// The list of architectures: adding one is a file in this folder and a line here.
#include "model/arch.h"

namespace tessera {

extern const Arch kLlamaArch;
extern const Arch kMptArch, kBloomArch, kRefactArch, kBaichuanArch;
extern const Arch kFalconArch, kStarcoderArch, kGpt2Arch, kGptneoxArch;
extern const Arch kQwen2Arch, kPhi3Arch, kGemmaArch;

namespace {
const Arch* const kArchs[] = {
    &kLlamaArch,
    &kMptArch, &kBloomArch, &kRefactArch, &kBaichuanArch,
    &kFalconArch, &kStarcoderArch, &kGpt2Arch, &kGptneoxArch,
    &kQwen2Arch, &kPhi3Arch, &kGemmaArch,
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

}  // namespace tessera
