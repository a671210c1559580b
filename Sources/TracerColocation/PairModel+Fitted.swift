// Written by Tools/bench/pair-model --fitted-radio: the pair decision's weights, fitted on random sites
// 1001–1008 ranged under their kiosks' own fit of the first hour (40 reporters each; 51,265 stretches of
// evidence, 56% truly near). Do not edit by hand: run the fit again.

extension PairModel {
    public static let fitted = PairModel(weights: [
        0.4020, -0.0651, 0.0959, 0.1162, 0.0582, 0.0084, -0.0414, 0.0453,
        0.5824, -0.1261, -0.3107, -0.2183, -0.0660, -0.1131, -0.0304, -0.0571,
    ])
}
