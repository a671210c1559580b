// Written by Tools/bench/pair-model --fitted-radio: the pair decision's weights, fitted on random sites
// 1001–1008 ranged under their kiosks' own fit of the first hour (40 reporters each; 51,201 stretches of
// evidence, 56% truly near). Do not edit by hand: run the fit again.

extension PairModel {
    public static let fitted = PairModel(weights: [
        0.4049, -0.0640, 0.0946, 0.1158, 0.0575, 0.0083, -0.0373, 0.0400,
        0.5842, -0.1308, -0.3085, -0.2213, -0.0659, -0.1131, -0.0297, -0.0586,
    ])
}
