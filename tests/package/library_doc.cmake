cmake_minimum_required(VERSION 3.25)
# Every ```cpp block of docs/library.md is cut from one of the two programs
# of tests/package (main.cpp and char_model.cpp), which run_consumers.cmake
# builds against the installed package. doc_snippets.cmake looks in one
# file, so it is given the two as one, with a copy of the page, in WORK:
#   cmake -DROOT=<source dir> -DWORK=<a folder> -P library_doc.cmake
file(READ ${ROOT}/tests/package/main.cpp first)
file(READ ${ROOT}/tests/package/char_model.cpp second)
file(REMOVE_RECURSE ${WORK})
file(WRITE ${WORK}/tests/package/main.cpp+char_model.cpp "${first}${second}")
file(COPY ${ROOT}/docs/library.md DESTINATION ${WORK}/docs)
set(ROOT ${WORK})
set(DOC docs/library.md)
set(TEST tests/package/main.cpp+char_model.cpp)
set(MIN 6)
include(${CMAKE_CURRENT_LIST_DIR}/../doc_snippets.cmake)
file(REMOVE_RECURSE ${WORK})
