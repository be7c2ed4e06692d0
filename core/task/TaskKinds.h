// defines: the registration of each task kind (one file in this folder each),
// listed by Registry.cpp
#pragma once

#include "TaskData.h"

namespace widelab {

const TaskSpec& listOpsTask();         // ListOps.cpp: generated, Long Range Arena rules
const TaskSpec& classificationTask();  // Classification.cpp: a TSV or text file of labelled texts
const TaskSpec& pairClassificationTask();  // Classification.cpp: a TSV of labelled pairs of texts
const TaskSpec& languageModelTask();   // LanguageModel.cpp: next tokens of any text file
const TaskSpec& maskedLanguageModelTask();  // MaskedLm.cpp: hidden tokens of any text file (BERT's pretraining)
const TaskSpec& imageFolderTask();     // ImageTask.cpp: a folder per class
const TaskSpec& cifar10Task();         // ImageTask.cpp: CIFAR-10's binary batches
const TaskSpec& shapesTask();          // ImageTask.cpp: generated shapes
const TaskSpec& fashionMnistTask();    // ImageTask.cpp: Fashion-MNIST, Debian's dataset-fashion-mnist
const TaskSpec& translationTask();     // Translation.cpp: pairs of texts, a TSV or two aligned files

}  // namespace widelab
