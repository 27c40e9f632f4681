#include "convert/hf_arch.h"

namespace tessera::convert {

extern const HfArch kHfLlama, kHfMistral, kHfMixtral, kHfQwen2, kHfGranite, kHfGemma, kHfGemma2, kHfQwen2Moe,
    kHfOlmoe, kHfOlmo2, kHfStarcoder2, kHfCommandR, kHfPhi3, kHfDeepseek2, kHfBert, kHfBertMlm, kHfGpt2, kHfStarcoder,
    kHfRefact, kHfMpt, kHfGptNeox, kHfBloom, kHfBloomModel, kHfFalcon, kHfFalconRw, kHfPersimmon, kHfBaichuan,
    kHfBaichuan2, kHfNomicBert;

const std::vector<const HfArch*>& hf_archs() {
  static const std::vector<const HfArch*> all = {&kHfLlama,  &kHfMistral, &kHfMixtral,    &kHfQwen2,    &kHfGranite,
                                                 &kHfGemma,  &kHfGemma2,  &kHfQwen2Moe,   &kHfOlmoe,    &kHfOlmo2,
                                                 &kHfStarcoder2, &kHfCommandR, &kHfPhi3,
                                                 &kHfDeepseek2, &kHfBert, &kHfBertMlm,
                                                 &kHfGpt2, &kHfStarcoder, &kHfRefact, &kHfMpt, &kHfGptNeox,
                                                 &kHfBloom, &kHfBloomModel, &kHfFalcon, &kHfFalconRw,
                                                 &kHfPersimmon, &kHfBaichuan, &kHfBaichuan2, &kHfNomicBert};
  return all;
}

Result<const HfArch*> find_hf_arch(const std::string& hf_name, const std::string& override_arch) {
  for (const HfArch* a : hf_archs()) {
    if (override_arch.empty() ? hf_name == a->hf_name : override_arch == a->arch) return a;
  }
  std::string known;
  for (const HfArch* a : hf_archs()) known += std::string(known.empty() ? "" : ", ") + a->hf_name + " (" + a->arch + ")";
  if (!override_arch.empty()) {
    return Status::error("convert: --arch-override '" + override_arch + "' is not an architecture convert writes (" +
                         known + ")");
  }
  return Status::error("convert: config.json's architecture '" + hf_name + "' is not one convert maps (it maps " +
                       known + ")");
}

}  // namespace tessera::convert
