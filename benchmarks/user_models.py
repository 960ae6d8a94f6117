"""A model as a user writes it, for the benchmarks' cases of a user's own model (`model=custom`): the matrices copy
this file into the folder a case runs in, where `model._target_=user_models.<function>` imports it, as a user's
module in their working directory is imported."""
import keras


def small_cnn(input_shape, num_classes, filters=16):
    """Two convolutions, each with batch norm (Keras's momentum 0.99), global pooling, a softmax."""
    inputs = keras.Input(shape=input_shape)
    x = inputs
    for width in (filters, 2 * filters):
        x = keras.layers.Conv2D(width, 3, padding="same", use_bias=False)(x)
        x = keras.layers.BatchNormalization()(x)
        x = keras.layers.Activation("relu")(x)
        x = keras.layers.MaxPooling2D(2)(x)
    x = keras.layers.GlobalAveragePooling2D()(x)
    return keras.Model(inputs, keras.layers.Dense(num_classes, activation="softmax")(x))
