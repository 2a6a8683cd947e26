# check_deterministic.cmake — the training tool is a pure function of its inputs.
#
#   cmake -DTOOL=<langid_train> -DDATA=<data dir> -DMODEL=<built langid.gguf> -DSCRATCH=<dir> -P check_deterministic.cmake
#
# Trains twice more from the same data and requires both files to equal the
# model the build produced, byte for byte: fixed seeds, fixed order, no
# threads, no timestamps. A difference means a rebuild could silently change
# what users run.
foreach(var TOOL DATA MODEL SCRATCH)
    if(NOT DEFINED ${var})
        message(FATAL_ERROR "check_deterministic.cmake needs -D${var}=...")
    endif()
endforeach()
foreach(run 1 2)
    set(out "${SCRATCH}/langid-rerun-${run}.gguf")
    execute_process(COMMAND "${TOOL}" --data "${DATA}" --out "${out}" --quiet RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "langid_train failed (exit ${rc}) writing ${out}")
    endif()
    execute_process(COMMAND "${CMAKE_COMMAND}" -E compare_files "${MODEL}" "${out}" RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "retraining gave different bytes: ${out} differs from ${MODEL}")
    endif()
    file(REMOVE "${out}")
endforeach()
message(STATUS "langid_train: two reruns match ${MODEL} byte for byte")
