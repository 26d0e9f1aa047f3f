#include <cstddef>
#include <stdexcept>
#include <vector>

namespace linalg {

constexpr double kEpsilon = 1e-9;

class Matrix {
public:
    Matrix(std::size_t rows, std::size_t cols)
        : rows_(rows), cols_(cols), data_(rows * cols, 0.0) {}

    double &at(std::size_t r, std::size_t c) {
        if (r >= rows_ || c >= cols_) {
            throw std::out_of_range("Matrix::at");
        }
        return data_[r * cols_ + c];
    }

    Matrix transpose() const;

    std::size_t rows() const { return rows_; }

private:
    std::size_t rows_;
    std::size_t cols_;
    std::vector<double> data_;
};

Matrix Matrix::transpose() const {
    Matrix out(cols_, rows_);
    for (std::size_t r = 0; r < rows_; ++r) {
        for (std::size_t c = 0; c < cols_; ++c) {
            out.data_[c * rows_ + r] = data_[r * cols_ + c];
        }
    }
    return out;
}

struct Shape {
    std::size_t rows;
    std::size_t cols;
};

bool nearly_equal(double a, double b) {
    return (a > b ? a - b : b - a) < kEpsilon;
}

}  // namespace linalg

template <typename T>
T clamp(T value, T lo, T hi) {
    return value < lo ? lo : (value > hi ? hi : value);
}

int main() {
    linalg::Matrix m(2, 3);
    m.at(0, 1) = 4.0;
    return linalg::nearly_equal(m.transpose().at(1, 0), 4.0) ? 0 : 1;
}
