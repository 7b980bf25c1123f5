cmake_minimum_required(VERSION 3.25)
# A lesson runs, and its page quotes only what it prints: every line of each
# ```text block that follows a <!-- output --> line in PAGE must be a line of
# PROGRAM's standard output (trailing spaces aside). Run as
#   cmake -DPROGRAM=<lesson> -DPAGE=<docs/lessons/NN_name.md> -DOUT=<dir> [-DCHECK_PAGE=OFF]
#         [-DPROBE=<blas_probe>] -P lesson_page.cmake
# (Blocks are cut out with string(FIND) and SUBSTRING, never as CMake lists,
# which would split the text at its semicolons.)
file(REMOVE_RECURSE ${OUT})
execute_process(COMMAND ${PROGRAM} --out ${OUT} RESULT_VARIABLE code OUTPUT_VARIABLE output
                ERROR_VARIABLE errors)
if(NOT code EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} exited with ${code}:\n${errors}")
endif()
if(NOT EXISTS ${PAGE})
  message(FATAL_ERROR "the lesson has no page: ${PAGE}")
endif()
# The sanitizer build (Debug, no vectorised kernels' rounding) trains to other
# last digits: there the lesson must run cleanly, and its page is not compared.
if(DEFINED CHECK_PAGE AND NOT CHECK_PAGE)
  message(STATUS "${PROGRAM} ran; its page is not compared in this build")
  return()
endif()
file(READ ${PAGE} page)
# A page whose figures come from a training run names the kernels they were
# measured with, <!-- measured on: blas_core=... cpu=... kernels=... gemm=... -->
# (tensor/kernels/blas_info.h): another CPU's kernels round differently and
# train to other figures. It is compared only where PROBE (blas_probe) finds
# the same kernels; elsewhere the lesson must run cleanly, as above.
string(REGEX MATCH "<!-- measured on: ([^>]*) -->" measured "${page}")
if(measured AND DEFINED PROBE)
  set(wanted "${CMAKE_MATCH_1}")
  execute_process(COMMAND ${PROBE} OUTPUT_VARIABLE machine ERROR_QUIET)
  string(FIND "${machine}" "${wanted}" same)
  if(same EQUAL -1)
    string(STRIP "${machine}" machine)
    message(STATUS "${PROGRAM} ran; its page's figures were measured on ${wanted}, "
                   "this machine runs ${machine}: not compared")
    return()
  endif()
endif()
string(REGEX REPLACE "[ ]+\n" "\n" output "\n${output}\n")
set(marker "<!-- output -->\n```text\n")
set(blocks 0)
while(TRUE)
  string(FIND "${page}" "${marker}" start)
  if(start EQUAL -1)
    break()
  endif()
  string(LENGTH "${marker}" marker_length)
  math(EXPR start "${start} + ${marker_length}")
  string(SUBSTRING "${page}" ${start} -1 page)
  string(FIND "${page}" "```" end)
  if(end EQUAL -1)
    message(FATAL_ERROR "${PAGE}: a ```text block is not closed")
  endif()
  string(SUBSTRING "${page}" 0 ${end} block)
  string(SUBSTRING "${page}" ${end} -1 page)
  math(EXPR blocks "${blocks} + 1")
  # Line by line: each quoted line, whole, somewhere in the output.
  while(NOT block STREQUAL "")
    string(FIND "${block}" "\n" eol)
    if(eol EQUAL -1)
      set(line "${block}")
      set(block "")
    else()
      string(SUBSTRING "${block}" 0 ${eol} line)
      math(EXPR eol "${eol} + 1")
      string(SUBSTRING "${block}" ${eol} -1 block)
    endif()
    string(REGEX REPLACE "[ ]+$" "" line "${line}")
    if(line STREQUAL "" OR line STREQUAL "...")
      continue()
    endif()
    string(FIND "${output}" "\n${line}\n" found)
    if(found EQUAL -1)
      message(FATAL_ERROR "${PAGE} quotes a line the lesson does not print:\n  ${line}\n"
                          "the lesson printed:\n${output}")
    endif()
  endwhile()
endwhile()
if(blocks EQUAL 0)
  message(FATAL_ERROR "${PAGE} quotes no output (a <!-- output --> line, then a ```text block)")
endif()
message(STATUS "${PAGE}: ${blocks} quoted blocks, every line printed by the lesson")
