/* fastsum.total(iterable of numbers) -> float: the sum, in C. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *total(PyObject *self, PyObject *iterable) {
    PyObject *iterator = PyObject_GetIter(iterable);
    if (iterator == NULL) {
        return NULL;
    }
    double sum = 0.0;
    PyObject *item;
    while ((item = PyIter_Next(iterator)) != NULL) {
        double value = PyFloat_AsDouble(item);
        Py_DECREF(item);
        if (value == -1.0 && PyErr_Occurred()) {
            Py_DECREF(iterator);
            return NULL;
        }
        sum += value;
    }
    Py_DECREF(iterator);
    if (PyErr_Occurred()) {
        return NULL;
    }
    return PyFloat_FromDouble(sum);
}

static PyMethodDef methods[] = {
    {"total", total, METH_O, "total(iterable) -> float: the sum of the numbers."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "fastsum", NULL, -1, methods};

PyMODINIT_FUNC PyInit_fastsum(void) { return PyModule_Create(&module); }
