// Written by Tools/bench/pair-model: the pair decision's weights, fitted on random sites
// 1001–1008 (40 reporters each; 50,296 stretches of evidence, 55% truly near).
// Do not edit by hand: run the fit again.

extension PairModel {
    public static let fitted = PairModel(weights: [
        0.7102, -0.0494, 0.1143, 0.1249, 0.0653, 0.0035, -0.1128, 0.0467,
        0.6623, -0.1348, -0.2657, -0.3680, -0.1197, -0.0964, -0.0359, -0.0566,
    ])
}
