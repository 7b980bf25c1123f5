cmake_minimum_required(VERSION 3.25)
# The library (tensor/, autograd/, nn/) is meant to be read in an afternoon,
# so what a reader must read is a budget, as tinygrad keeps one: this fails
# when those .h and .cpp files together pass kBudget lines. Growing past it
# is a decision: raise the number here, in the same commit, and say why in
# its message.
#
# A row of a table is not read to read the library: a norm, a scale mode or
# a positional scheme is met through its row (kTables), and its layer or
# variant only by one who wants that row. So a row's own files are left out
# of the total, found by what includes them, not by a list: a header that
# only the tables' .cpp files include (nn/dyt.h, nn/softcap.h), with its
# .cpp. Adding a row then costs the total only the row's lines in its table,
# and edits nothing here. Each row file is still held to kRowFile lines,
# the house's largest file.
# Run as
#   cmake -DROOT=<source dir> -P library_budget.cmake
set(kBudget 15250)
set(kRowFile 400)
set(kTables nn/norm_kinds.cpp nn/ffn_kinds.cpp nn/scale_modes.cpp nn/positional_schemes.cpp)

set(all "")
foreach(folder tensor autograd nn)
  file(GLOB_RECURSE sources RELATIVE ${ROOT} ${ROOT}/${folder}/*.h ${ROOT}/${folder}/*.cpp)
  list(APPEND all ${sources})
endforeach()
# Who includes each header: includers_<header>.
foreach(source IN LISTS all)
  file(STRINGS ${ROOT}/${source} includes REGEX "^#include \"")
  foreach(line IN LISTS includes)
    string(REGEX REPLACE "^#include \"([^\"]+)\".*" "\\1" header "${line}")
    list(APPEND includers_${header} ${source})
  endforeach()
endforeach()
# Row files: a header included by a table's .cpp and by nothing else of the
# library but its own .cpp; and that .cpp.
set(rows "")
foreach(source IN LISTS all)
  if(NOT source MATCHES "\\.h$")
    continue()
  endif()
  string(REGEX REPLACE "\\.h$" ".cpp" own ${source})
  set(row TRUE)
  set(in_table FALSE)
  foreach(includer IN LISTS includers_${source})
    if(includer IN_LIST kTables)
      set(in_table TRUE)
    elseif(NOT includer STREQUAL own)
      set(row FALSE)
    endif()
  endforeach()
  if(row AND in_table)
    list(APPEND rows ${source})
    if(EXISTS ${ROOT}/${own})
      list(APPEND rows ${own})
    endif()
  endif()
endforeach()

set(total 0)
set(row_total 0)
set(largest "")
set(largest_lines 0)
foreach(source IN LISTS all)
  file(READ ${ROOT}/${source} text)
  string(REGEX MATCHALL "\n" newlines "${text}")
  list(LENGTH newlines count)
  if(source IN_LIST rows)
    math(EXPR row_total "${row_total} + ${count}")
    if(count GREATER kRowFile)
      message(FATAL_ERROR "${source}, a row's file, is ${count} lines, over ${kRowFile}: split it")
    endif()
    continue()
  endif()
  math(EXPR total "${total} + ${count}")
  if(count GREATER largest_lines)
    set(largest_lines ${count})
    set(largest ${source})
  endif()
endforeach()
list(LENGTH rows row_files)
string(REPLACE ";" ", " row_list "${rows}")
if(total GREATER kBudget)
  message(FATAL_ERROR "the library (tensor/, autograd/, nn/) less its rows' files is ${total} "
                      "lines, over its budget of ${kBudget} (largest file: ${largest}, "
                      "${largest_lines} lines): make it smaller, or raise kBudget in "
                      "tests/library_budget.cmake and say why")
endif()
message(STATUS "the library is ${total} lines of its budget of ${kBudget} (largest file: "
               "${largest}, ${largest_lines} lines), besides ${row_files} files of its tables' "
               "rows, ${row_total} lines: ${row_list}")
