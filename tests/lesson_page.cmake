cmake_minimum_required(VERSION 3.25)
# A lesson runs, its claims hold, and its page quotes only what it prints:
# every line of each ```text block that follows a <!-- output --> line in PAGE
# must be a line of PROGRAM's standard output (trailing spaces aside). Run as
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
file(READ ${PAGE} page)
# The claims, checked on every build and every kernel path, the page's digits
# or not: the lesson prints each claim its page makes, "claim: <text>: holds"
# or "...: does not hold", computed from what it measured
# (examples/lessons/lesson.h). None may fail, and the page and the program
# must name the same claims: the page quotes each line the lesson prints.
# (A claim's semicolons stand in as <sc> here: CMake lists split at them.)
string(REPLACE ";" "<sc>" output_sc "${output}")
string(REPLACE ";" "<sc>" page_sc "${page}")
string(REGEX MATCHALL "(^|\n)claim: [^\n]*" printed_claims "${output_sc}")
string(REGEX MATCHALL "\nclaim: [^\n]*" page_claims "\n${page_sc}")
if(NOT printed_claims)
  message(FATAL_ERROR "${PROGRAM} prints no claim (a line \"claim: ...: holds\")")
endif()
foreach(claim IN LISTS printed_claims)
  string(STRIP "${claim}" claim)
  if(claim MATCHES ": does not hold$")
    set(machine "kernels not probed")
    if(DEFINED PROBE)
      execute_process(COMMAND ${PROBE} OUTPUT_VARIABLE machine ERROR_QUIET)
      string(STRIP "${machine}" machine)
    endif()
    message(FATAL_ERROR "${PROGRAM}: a claim of its page does not hold on this machine "
                        "(${machine}):\n  ${claim}\nthe lesson printed:\n${output}")
  endif()
  string(FIND "${page_sc}" "\n${claim}\n" quoted)
  if(quoted EQUAL -1)
    message(FATAL_ERROR "${PAGE} does not quote a claim its lesson prints:\n  ${claim}")
  endif()
endforeach()
foreach(claim IN LISTS page_claims)
  string(STRIP "${claim}" claim)
  string(FIND "\n${output_sc}\n" "\n${claim}\n" printed)
  if(printed EQUAL -1)
    message(FATAL_ERROR "${PAGE} makes a claim its lesson does not print:\n  ${claim}\n"
                        "the lesson printed:\n${output}")
  endif()
endforeach()
# The sanitizer build (Debug, no vectorised kernels' rounding) trains to other
# last digits: there the lesson must run cleanly, and its page is not compared.
if(DEFINED CHECK_PAGE AND NOT CHECK_PAGE)
  message(STATUS "${PROGRAM} ran; its page is not compared in this build")
  return()
endif()
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
