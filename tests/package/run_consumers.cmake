cmake_minimum_required(VERSION 3.25)
# The programs of docs/library.md against the INSTALLED package, as a user
# builds them: install the build's libraries and headers into a folder of
# its own, configure tests/package against it with find_package, build, run.
# Then char_model's promise: "train 6, save; in a fresh process build the
# model from the checkpoint alone and train 4 more" writes the checkpoint
# "train 10" writes, byte for byte (weights, AdamW's moments, the data
# generator). Run as
#   cmake -DSOURCE=<source dir> -DBUILD=<build dir> -DWORK=<empty folder> -P run_consumers.cmake
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "${ARGN}\nexited ${code}\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/a ${WORK}/b)
run(${CMAKE_COMMAND} --install ${BUILD} --prefix ${WORK}/install)
run(${CMAKE_COMMAND} -S ${SOURCE}/tests/package -B ${WORK}/consumer -DCMAKE_BUILD_TYPE=Release
    -DCMAKE_PREFIX_PATH=${WORK}/install)
run(${CMAKE_COMMAND} --build ${WORK}/consumer -j2)
run(${WORK}/consumer/consumer)
message(STATUS "${last_output}")

set(model ${WORK}/consumer/char_model)
set(text ${SOURCE}/README.md)
run(${model} train ${text} ${WORK}/a 6)
run(${model} resume ${WORK}/a 4)
message(STATUS "${last_output}")
string(FIND "${last_output}" "step 10: loss" resumed_to_10)
if(resumed_to_10 EQUAL -1)
  message(FATAL_ERROR "char_model resume did not train steps 7 to 10:\n${last_output}")
endif()
run(${model} train ${text} ${WORK}/b 10)
file(SHA256 ${WORK}/a/checkpoint.safetensors resumed)
file(SHA256 ${WORK}/b/checkpoint.safetensors uninterrupted)
if(NOT resumed STREQUAL uninterrupted)
  message(FATAL_ERROR "train 6 + resume 4 wrote another checkpoint than train 10")
endif()
message(STATUS "train 6 + resume 4 = train 10, byte for byte")
file(REMOVE_RECURSE ${WORK})
