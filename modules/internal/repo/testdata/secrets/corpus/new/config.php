<?php
$newRelicInsertKey .= 'NRII@@-0ce954b141082dbb5a5b75e56eb4fb71';
