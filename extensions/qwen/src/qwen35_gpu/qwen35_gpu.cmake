# qwen35_gpu.cmake — qwen35-gpu: Qwen3.5/3.8 (GGUF arch qwen35) on the GPU, and its tests.
# Included at the end of extensions/qwen/extension.cmake, after the CPU core
# (src/qwen35/qwen35.cmake) whose host-side parts it links. The SDK creates
# the targets only where a GPU compiler was found (extension.json: requires gpu).

set(qwen35_gpu_kernel_sources
    src/qwen35_gpu/gpu_gdn.cu
    src/qwen35_gpu/gpu_gated_attention.cu
)
gufo_extension_library(qwen_qwen35_gpu
    SOURCES src/qwen35_gpu/provider.c src/qwen35_gpu/weights.c src/qwen35_gpu/forward.c src/qwen35_gpu/state.c
            src/qwen35_gpu/session.c
    CUDA_SOURCES ${qwen35_gpu_kernel_sources}
    LINK qwen_gpu qwen_qwen35_cpu qwen_cpu m)

# qwen35-gpu against qwen35-cpu through the public interface on the tiny random
# models (F32, BF16, Q8_0) and the 27B structure at test size (Q4_K_M, with the Qwen3
# vocabulary when qwen_vocab wrote it): greedy tokens, logits, batch == solo,
# snapshot/restore, prefill then decode == decode only. Without a GPU: the probe must
# decline saying so, then skip (77).
if(TARGET qwen_qwen35_random_model)
    gufo_extension_test(qwen_qwen35_gpu_tests SOURCES tests/qwen35/test_gpu.c
        LINK qwen_qwen35_gpu qwen_qwen35_cpu qwen_gpu qwen_cpu m
        ARGS "$<TARGET_FILE:qwen_qwen35_random_model>" "${GUFO_EXTENSION_BINARY_DIR}/qwen35"
             "$<TARGET_FILE:qwen_random_model>" "${qwen_vocab_gguf}")
endif()

# The kernels compiled for AMD as well, so the HIP path cannot rot (compile only).
if(BUILD_TESTING AND QWEN_HIPCC)
    set(qwen35_hip_compile "")
    foreach(kernel IN LISTS qwen35_gpu_kernel_sources)
        cmake_path(GET kernel STEM stem)
        string(APPEND qwen35_hip_compile "'${QWEN_HIPCC}' -std=c++17 -x hip --offload-arch=gfx90a -O2 -c "
               "'${GUFO_EXTENSION_DIR}/${kernel}' -I'${GUFO_PUBLIC_INCLUDE_DIR}' "
               "-o '${GUFO_EXTENSION_BINARY_DIR}/${stem}.hip.o' && ")
    endforeach()
    add_test(NAME qwen.qwen35_gpu_kernels_hipcc COMMAND sh -c "${qwen35_hip_compile}true")
    set_tests_properties(qwen.qwen35_gpu_kernels_hipcc PROPERTIES LABELS "extension;extension:qwen;gpu-compile")
endif()
