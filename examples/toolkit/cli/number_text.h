// Numbers for people to read: the settings a program prints in its run
// header, its --help and its reports.
//
// std::to_chars alone gives the shortest text that reads back as exactly the
// double, which for a value the user typed is what they typed ("0.003"), but
// for one computed in binary shows the arithmetic's last bits: --lr 0.003
// makes cosine's floor lr/10 = 0.00030000000000000003. number_text stops at
// 15 significant digits, the most a double keeps of any decimal (DBL_DIG):
// every value typed with 15 digits or fewer still prints exactly as typed,
// and a computed one prints as its 15-digit rounding, "0.0003".
//
// Where the text must read back bit for bit (a checkpoint's metadata, a CSV
// log), use the exact forms instead: cli::detail::format_value, CsvLog.
#pragma once

#include <string>

namespace gradflow::cli {

// "0.003", "2", "250000", "0.0003" for 0.003 / 10; with an exponent below
// 1e-4 and from 1e15 on ("1e-05", "1e+300"); "nan", "inf", "-inf".
// Independent of the C locale (never "0,5").
std::string number_text(double v);

}  // namespace gradflow::cli
