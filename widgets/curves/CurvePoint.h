// defines: widelab::CurvePoint, one logged value of one metric, as the curve
// widgets receive it (plain data, cheap to include)
#pragma once

namespace widelab {

struct CurvePoint {
    double step = 0;     // optimiser updates done when the value was logged
    double seconds = 0;  // wall-clock seconds since the run started
    double value = 0;    // the metric; NaN and infinities are kept but drawn as gaps
};

}  // namespace widelab
